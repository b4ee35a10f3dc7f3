"""Stride-1 2D transposed convolution with a square kernel on square feature maps (output grows by K-1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose2d", "convolution", "transposed"]

BATCH = 16
IN_CHANNELS = 128
OUT_CHANNELS = 64
SIZE = 96
KERNEL_SIZE = 3

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=96, OUT_CHANNELS=160, SIZE=101, KERNEL_SIZE=5),
    dict(BATCH=32, IN_CHANNELS=257, OUT_CHANNELS=63, SIZE=45, KERNEL_SIZE=3),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=4, SIZE=12, KERNEL_SIZE=3)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=5, OUT_CHANNELS=7, SIZE=15, KERNEL_SIZE=5),
    dict(BATCH=3, IN_CHANNELS=9, OUT_CHANNELS=3, SIZE=9, KERNEL_SIZE=3),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]
