"""Image decoder output stage: bias-free 4x4 stride-2 transposed convolution, a learned per-channel bias add, tanh and a constant scale."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose2d", "bias", "tanh", "scale"]

BATCH = 32
IN_CHANNELS = 128
OUT_CHANNELS = 32
HEIGHT = 64
WIDTH = 64
SCALING_FACTOR = 0.5

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=96, OUT_CHANNELS=48, HEIGHT=97, WIDTH=81),
    dict(BATCH=64, IN_CHANNELS=160, OUT_CHANNELS=12, HEIGHT=45, WIDTH=57, SCALING_FACTOR=2.0),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=4, HEIGHT=6, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=7, OUT_CHANNELS=5, HEIGHT=5, WIDTH=7),
    dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=3, HEIGHT=9, WIDTH=4, SCALING_FACTOR=2.0),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, scaling_factor):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, 4, stride=2, padding=1, bias=False)
        self.bias = nn.Parameter(0.3 * torch.randn(out_channels, 1, 1))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = self.deconv(x) + self.bias
        return torch.tanh(x) * self.scaling_factor


def get_inputs():
    return [2.0 * torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, SCALING_FACTOR]
