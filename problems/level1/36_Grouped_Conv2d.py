"""Grouped 3x3 2D convolution in which channels are split into independent groups, as in ResNeXt blocks."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "grouped", "convolution"]

BATCH = 32
IN_CHANNELS = 256
OUT_CHANNELS = 512
SIZE = 56
KERNEL_SIZE = 3
PADDING = 1
GROUPS = 16

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=384, OUT_CHANNELS=384, SIZE=61, KERNEL_SIZE=3, PADDING=1, GROUPS=6),
    dict(BATCH=32, IN_CHANNELS=120, OUT_CHANNELS=360, SIZE=45, KERNEL_SIZE=5, PADDING=2, GROUPS=3),
]
SMALL = dict(BATCH=2, IN_CHANNELS=16, OUT_CHANNELS=32, SIZE=12, KERNEL_SIZE=3, PADDING=1, GROUPS=4)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=9, OUT_CHANNELS=15, SIZE=11, KERNEL_SIZE=3, PADDING=1, GROUPS=3),
    dict(BATCH=1, IN_CHANNELS=10, OUT_CHANNELS=20, SIZE=13, KERNEL_SIZE=5, PADDING=2, GROUPS=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, padding, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding,
                              groups=groups, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING, GROUPS]
