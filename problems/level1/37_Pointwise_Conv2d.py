"""Pointwise (1x1) 2D convolution with bias, mixing channels at every spatial position."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "pointwise", "convolution"]

BATCH = 32
IN_CHANNELS = 256
OUT_CHANNELS = 512
SIZE = 56

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=96, OUT_CHANNELS=576, SIZE=97),
    dict(BATCH=128, IN_CHANNELS=513, OUT_CHANNELS=129, SIZE=28),
]
SMALL = dict(BATCH=2, IN_CHANNELS=16, OUT_CHANNELS=24, SIZE=12)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=7, OUT_CHANNELS=13, SIZE=9),
    dict(BATCH=1, IN_CHANNELS=33, OUT_CHANNELS=5, SIZE=15),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
