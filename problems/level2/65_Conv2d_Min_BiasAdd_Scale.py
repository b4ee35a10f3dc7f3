"""Valid 3x3 convolution, elementwise minimum with a constant, a learned per-channel bias add and a constant scale."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "min", "bias", "scale"]

BATCH = 64
IN_CHANNELS = 32
OUT_CHANNELS = 64
HEIGHT = 96
WIDTH = 96
MIN_VALUE = 0.5
SCALING_FACTOR = 2.0

VARIANTS = [
    dict(BATCH=32, IN_CHANNELS=48, OUT_CHANNELS=96, HEIGHT=85, WIDTH=85, MIN_VALUE=0.25),
    dict(BATCH=16, IN_CHANNELS=64, OUT_CHANNELS=200, HEIGHT=67, WIDTH=103, SCALING_FACTOR=0.75),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=11, WIDTH=9, MIN_VALUE=0.25),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=6, HEIGHT=13, WIDTH=8, SCALING_FACTOR=0.75),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, min_value, scaling_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)
        self.bias = nn.Parameter(0.2 * torch.randn(out_channels, 1, 1))
        self.min_value = min_value
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = torch.clamp_max(self.conv(x), self.min_value)  # min(x, constant)
        x = x + self.bias
        return x * self.scaling_factor


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, MIN_VALUE, SCALING_FACTOR]
