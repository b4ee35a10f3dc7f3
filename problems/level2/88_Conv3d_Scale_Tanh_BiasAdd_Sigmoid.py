"""Valid 3x3x3 convolution, a constant scale, tanh, a learned per-channel bias add and sigmoid."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv3d", "scale", "tanh", "bias", "sigmoid"]

BATCH = 8
IN_CHANNELS = 16
OUT_CHANNELS = 32
DEPTH = 32
HEIGHT = 64
WIDTH = 64
SCALING_FACTOR = 1.5

VARIANTS = [
    dict(BATCH=4, IN_CHANNELS=24, OUT_CHANNELS=48, DEPTH=29, HEIGHT=71, WIDTH=59, SCALING_FACTOR=0.5),
    dict(BATCH=16, IN_CHANNELS=8, OUT_CHANNELS=40, DEPTH=17, HEIGHT=65, WIDTH=65),
]
SMALL = dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=6, DEPTH=6, HEIGHT=6, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=4, OUT_CHANNELS=5, DEPTH=5, HEIGHT=7, WIDTH=6, SCALING_FACTOR=0.5),
    dict(BATCH=2, IN_CHANNELS=5, OUT_CHANNELS=7, DEPTH=4, HEIGHT=5, WIDTH=9),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, scaling_factor):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1, 1))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = torch.tanh(self.conv(x) * self.scaling_factor)
        x = x + self.bias
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, SCALING_FACTOR]
