"""Valid 3x3 convolution, division by a constant, LeakyReLU and a max over the channel dimension."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "divide", "leaky_relu", "max"]

BATCH = 32
IN_CHANNELS = 128
OUT_CHANNELS = 64
HEIGHT = 96
WIDTH = 96
DIVISOR = 2.0
NEGATIVE_SLOPE = 0.01

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=96, OUT_CHANNELS=160, HEIGHT=83, WIDTH=101, DIVISOR=3.0),
    dict(BATCH=48, IN_CHANNELS=64, OUT_CHANNELS=33, HEIGHT=129, WIDTH=65),
]
SMALL = dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=11, WIDTH=9, DIVISOR=3.0),
    dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=3, HEIGHT=8, WIDTH=13),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, divisor, negative_slope):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)
        self.divisor = divisor
        self.negative_slope = negative_slope

    def forward(self, x):
        x = self.conv(x) / self.divisor
        x = F.leaky_relu(x, self.negative_slope)
        return torch.amax(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, DIVISOR, NEGATIVE_SLOPE]
