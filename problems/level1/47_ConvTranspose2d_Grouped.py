"""Grouped, strided 2D transposed convolution in which channel groups are upsampled independently."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose2d", "convolution", "transposed", "grouped", "strided"]

BATCH = 16
IN_CHANNELS = 256
OUT_CHANNELS = 256
SIZE = 48
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 1
GROUPS = 4

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=192, OUT_CHANNELS=288, SIZE=61, KERNEL_SIZE=3, STRIDE=2, PADDING=1,
         GROUPS=3),
    dict(BATCH=24, IN_CHANNELS=320, OUT_CHANNELS=160, SIZE=55, KERNEL_SIZE=4, STRIDE=2, PADDING=1,
         GROUPS=8),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=8, SIZE=8, KERNEL_SIZE=4, STRIDE=2, PADDING=1,
             GROUPS=4)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=9, OUT_CHANNELS=6, SIZE=11, KERNEL_SIZE=3, STRIDE=2, PADDING=1,
         GROUPS=3),
    dict(BATCH=3, IN_CHANNELS=10, OUT_CHANNELS=15, SIZE=7, KERNEL_SIZE=4, STRIDE=2, PADDING=1,
         GROUPS=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, groups):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, groups=groups)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING, GROUPS]
