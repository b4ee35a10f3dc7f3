"""Strided, zero-padded 2D convolution with a large kernel, as in an image classifier's stem (7x7, stride 2)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "convolution", "strided", "padded"]

BATCH = 64
IN_CHANNELS = 3
OUT_CHANNELS = 64
SIZE = 224
KERNEL_SIZE = 7
STRIDE = 2
PADDING = 3

VARIANTS = [
    dict(BATCH=32, IN_CHANNELS=3, OUT_CHANNELS=96, SIZE=299, KERNEL_SIZE=7, STRIDE=2, PADDING=3),
    dict(BATCH=48, IN_CHANNELS=32, OUT_CHANNELS=64, SIZE=161, KERNEL_SIZE=5, STRIDE=3, PADDING=1),
]
SMALL = dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=8, SIZE=32, KERNEL_SIZE=7, STRIDE=2, PADDING=3)
SMALL_VARIANTS = [
    dict(BATCH=1, IN_CHANNELS=3, OUT_CHANNELS=5, SIZE=29, KERNEL_SIZE=7, STRIDE=2, PADDING=3),
    dict(BATCH=3, IN_CHANNELS=4, OUT_CHANNELS=6, SIZE=23, KERNEL_SIZE=5, STRIDE=3, PADDING=1),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING]
