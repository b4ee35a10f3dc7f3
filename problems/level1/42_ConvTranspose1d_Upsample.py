"""Strided 1D transposed convolution that upsamples sequences, as in a neural vocoder's upsampling stage."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose1d", "convolution", "transposed", "strided", "upsample"]

BATCH = 16
IN_CHANNELS = 256
OUT_CHANNELS = 128
LENGTH = 4096
KERNEL_SIZE = 8
STRIDE = 4
PADDING = 2
DILATION = 1

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=129, OUT_CHANNELS=200, LENGTH=6001, KERNEL_SIZE=5, STRIDE=2,
         PADDING=1, DILATION=3),
    dict(BATCH=32, IN_CHANNELS=256, OUT_CHANNELS=128, LENGTH=1023, KERNEL_SIZE=16, STRIDE=8,
         PADDING=4, DILATION=1),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=6, LENGTH=64, KERNEL_SIZE=8, STRIDE=4,
             PADDING=2, DILATION=1)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, LENGTH=81, KERNEL_SIZE=5, STRIDE=2,
         PADDING=1, DILATION=3),
    dict(BATCH=3, IN_CHANNELS=9, OUT_CHANNELS=4, LENGTH=47, KERNEL_SIZE=16, STRIDE=8,
         PADDING=4, DILATION=1),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation):
        super().__init__()
        self.conv_t = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, dilation=dilation)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING, DILATION]
