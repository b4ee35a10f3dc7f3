"""Valid 3x3 convolution, tanh, a constant scale, a learned per-channel bias add and 2x2 max pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "tanh", "scale", "bias", "maxpool"]

BATCH = 32
IN_CHANNELS = 48
OUT_CHANNELS = 96
HEIGHT = 112
WIDTH = 112
SCALING_FACTOR = 2.5

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=64, OUT_CHANNELS=128, HEIGHT=97, WIDTH=97, SCALING_FACTOR=0.5),
    dict(BATCH=64, IN_CHANNELS=32, OUT_CHANNELS=56, HEIGHT=81, WIDTH=119),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=11, WIDTH=9, SCALING_FACTOR=0.5),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=6, HEIGHT=9, WIDTH=14),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, scaling_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)
        self.bias = nn.Parameter(0.5 * torch.randn(out_channels, 1, 1))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = torch.tanh(self.conv(x))
        x = x * self.scaling_factor + self.bias
        return F.max_pool2d(x, 2)


def get_inputs():
    return [2.0 * torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, SCALING_FACTOR]
