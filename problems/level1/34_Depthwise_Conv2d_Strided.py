"""Depthwise 2D convolution with a 5x5 kernel and stride 2 that downsamples each channel independently."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "depthwise", "convolution", "strided"]

BATCH = 64
CHANNELS = 192
SIZE = 112
KERNEL_SIZE = 5
STRIDE = 2
PADDING = 2

VARIANTS = [
    dict(BATCH=32, CHANNELS=333, SIZE=99, KERNEL_SIZE=3, STRIDE=2, PADDING=1),
    dict(BATCH=50, CHANNELS=120, SIZE=151, KERNEL_SIZE=7, STRIDE=3, PADDING=3),
]
SMALL = dict(BATCH=2, CHANNELS=8, SIZE=24, KERNEL_SIZE=5, STRIDE=2, PADDING=2)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=5, SIZE=19, KERNEL_SIZE=3, STRIDE=2, PADDING=1),
    dict(BATCH=1, CHANNELS=7, SIZE=31, KERNEL_SIZE=7, STRIDE=3, PADDING=3),
]


class Model(nn.Module):
    def __init__(self, channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, stride=stride, padding=padding,
                              groups=channels, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS, KERNEL_SIZE, STRIDE, PADDING]
