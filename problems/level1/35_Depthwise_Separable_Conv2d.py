"""Depthwise-separable 2D convolution: a 3x3 depthwise convolution followed by a 1x1 pointwise convolution."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "depthwise_separable", "depthwise", "pointwise", "convolution"]

BATCH = 32
IN_CHANNELS = 128
OUT_CHANNELS = 256
SIZE = 112
KERNEL_SIZE = 3

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=96, OUT_CHANNELS=200, SIZE=127, KERNEL_SIZE=3),
    dict(BATCH=64, IN_CHANNELS=255, OUT_CHANNELS=129, SIZE=57, KERNEL_SIZE=5),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=16, SIZE=16, KERNEL_SIZE=3)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, SIZE=15, KERNEL_SIZE=3),
    dict(BATCH=1, IN_CHANNELS=9, OUT_CHANNELS=13, SIZE=11, KERNEL_SIZE=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, kernel_size,
                                   padding=kernel_size // 2, groups=in_channels, bias=False)
        self.pointwise = nn.Conv2d(in_channels, out_channels, 1, bias=False)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]
