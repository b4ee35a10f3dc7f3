"""Valid 3x3 convolution followed by Mish, tanh and multiplication by a constant scaling factor."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "mish", "tanh", "scale"]

BATCH = 32
IN_CHANNELS = 96
OUT_CHANNELS = 96
HEIGHT = 80
WIDTH = 80
SCALING_FACTOR = 1.75

VARIANTS = [
    dict(BATCH=20, IN_CHANNELS=64, OUT_CHANNELS=144, HEIGHT=101, WIDTH=101),
    dict(BATCH=64, IN_CHANNELS=48, OUT_CHANNELS=72, HEIGHT=63, WIDTH=90, SCALING_FACTOR=0.6),
]
SMALL = dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=6, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=9, WIDTH=11),
    dict(BATCH=1, IN_CHANNELS=4, OUT_CHANNELS=9, HEIGHT=13, WIDTH=8, SCALING_FACTOR=0.6),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, scaling_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = F.mish(self.conv(x))
        x = torch.tanh(x)
        return x * self.scaling_factor


def get_inputs():
    return [2.0 * torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, SCALING_FACTOR]
