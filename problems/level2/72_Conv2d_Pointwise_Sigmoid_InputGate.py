"""Pointwise (1x1) convolution whose sigmoid gates the block input elementwise, x * sigmoid(conv1x1(x))."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "pointwise", "sigmoid", "gating", "multiply"]

BATCH = 32
CHANNELS = 256
HEIGHT = 64
WIDTH = 64

VARIANTS = [
    dict(BATCH=16, CHANNELS=384, HEIGHT=55, WIDTH=55),
    dict(BATCH=64, CHANNELS=136, HEIGHT=79, WIDTH=63),
]
SMALL = dict(BATCH=2, CHANNELS=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=7, HEIGHT=11, WIDTH=9),
    dict(BATCH=2, CHANNELS=13, HEIGHT=8, WIDTH=12),
]


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.conv(x))


def get_inputs():
    return [2.0 * torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
