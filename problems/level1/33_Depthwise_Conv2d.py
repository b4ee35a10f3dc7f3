"""Depthwise 2D convolution (groups equal to channels, one filter per channel), as in MobileNet blocks."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "depthwise", "convolution"]

BATCH = 64
CHANNELS = 128
SIZE = 112
KERNEL_SIZE = 3
PADDING = 1

VARIANTS = [
    dict(BATCH=32, CHANNELS=257, SIZE=97, KERNEL_SIZE=5, PADDING=2),
    dict(BATCH=128, CHANNELS=96, SIZE=75, KERNEL_SIZE=3, PADDING=0),
]
SMALL = dict(BATCH=2, CHANNELS=8, SIZE=16, KERNEL_SIZE=3, PADDING=1)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=5, SIZE=17, KERNEL_SIZE=5, PADDING=2),
    dict(BATCH=1, CHANNELS=11, SIZE=13, KERNEL_SIZE=3, PADDING=0),
]


class Model(nn.Module):
    def __init__(self, channels, kernel_size, padding):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=padding, groups=channels)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS, KERNEL_SIZE, PADDING]
