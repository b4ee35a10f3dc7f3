"""Dilated 2D transposed convolution with a 3x3 kernel, padding and optional stride."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose2d", "convolution", "transposed", "dilated"]

BATCH = 16
IN_CHANNELS = 128
OUT_CHANNELS = 128
SIZE = 64
KERNEL_SIZE = 3
STRIDE = 1
PADDING = 2
DILATION = 2

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=96, OUT_CHANNELS=192, SIZE=77, KERNEL_SIZE=3, STRIDE=2, PADDING=1,
         DILATION=3),
    dict(BATCH=32, IN_CHANNELS=160, OUT_CHANNELS=64, SIZE=39, KERNEL_SIZE=5, STRIDE=1, PADDING=0,
         DILATION=4),
]
SMALL = dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=8, SIZE=12, KERNEL_SIZE=3, STRIDE=1, PADDING=2,
             DILATION=2)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=5, OUT_CHANNELS=7, SIZE=13, KERNEL_SIZE=3, STRIDE=2, PADDING=1,
         DILATION=3),
    dict(BATCH=3, IN_CHANNELS=3, OUT_CHANNELS=5, SIZE=11, KERNEL_SIZE=5, STRIDE=1, PADDING=0,
         DILATION=4),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, dilation=dilation, bias=False)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING, DILATION]
