"""Asymmetric 1x7 same-padded convolution (Inception-style factorized kernel), SiLU, a learned per-channel scale and a clamp to a fixed range."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "silu", "scale", "clamp"]

BATCH = 32
IN_CHANNELS = 192
OUT_CHANNELS = 192
HEIGHT = 47
WIDTH = 47
CLAMP_MIN = -0.5
CLAMP_MAX = 1.0

VARIANTS = [
    dict(BATCH=64, IN_CHANNELS=128, OUT_CHANNELS=160, HEIGHT=35, WIDTH=35),
    dict(BATCH=24, IN_CHANNELS=160, OUT_CHANNELS=208, HEIGHT=61, WIDTH=45, CLAMP_MIN=-0.25, CLAMP_MAX=2.0),
]
SMALL = dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=9, WIDTH=11),
    dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=6, HEIGHT=7, WIDTH=13, CLAMP_MIN=-0.25, CLAMP_MAX=2.0),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, clamp_min, clamp_max):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, (1, 7), padding=(0, 3))
        self.channel_scale = nn.Parameter(1.5 * torch.randn(out_channels, 1, 1))
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = F.silu(self.conv(x))
        x = x * self.channel_scale
        return torch.clamp(x, self.clamp_min, self.clamp_max)


def get_inputs():
    return [2.0 * torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, CLAMP_MIN, CLAMP_MAX]
