"""1D convolution with stride, dilation and zero padding over a batch of multi-channel sequences."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv1d", "convolution", "dilated", "strided"]

BATCH = 16
IN_CHANNELS = 256
OUT_CHANNELS = 256
LENGTH = 16384
KERNEL_SIZE = 5
STRIDE = 2
DILATION = 3
PADDING = 6

VARIANTS = [
    dict(BATCH=9, IN_CHANNELS=192, OUT_CHANNELS=320, LENGTH=12001, KERNEL_SIZE=3, STRIDE=3,
         DILATION=2, PADDING=2),
    dict(BATCH=32, IN_CHANNELS=129, OUT_CHANNELS=255, LENGTH=6007, KERNEL_SIZE=7, STRIDE=2,
         DILATION=4, PADDING=0),
]
SMALL = dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=8, LENGTH=129, KERNEL_SIZE=3, STRIDE=2,
             DILATION=2, PADDING=2)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, LENGTH=101, KERNEL_SIZE=5, STRIDE=3,
         DILATION=3, PADDING=1),
    dict(BATCH=2, IN_CHANNELS=9, OUT_CHANNELS=4, LENGTH=97, KERNEL_SIZE=3, STRIDE=2,
         DILATION=5, PADDING=0),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, dilation, padding):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, dilation=dilation, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, DILATION, PADDING]
