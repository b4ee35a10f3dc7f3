"""Stride-1 3D transposed convolution with a cubic kernel on cubic volumes."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose3d", "convolution", "transposed"]

BATCH = 8
IN_CHANNELS = 64
OUT_CHANNELS = 32
SIZE = 32
KERNEL_SIZE = 3

VARIANTS = [
    dict(BATCH=4, IN_CHANNELS=48, OUT_CHANNELS=40, SIZE=37, KERNEL_SIZE=3),
    dict(BATCH=3, IN_CHANNELS=32, OUT_CHANNELS=64, SIZE=25, KERNEL_SIZE=5),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=6, SIZE=6, KERNEL_SIZE=3)
SMALL_VARIANTS = [
    dict(BATCH=1, IN_CHANNELS=5, OUT_CHANNELS=3, SIZE=7, KERNEL_SIZE=3),
    dict(BATCH=3, IN_CHANNELS=3, OUT_CHANNELS=5, SIZE=5, KERNEL_SIZE=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv_t = nn.ConvTranspose3d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]
