"""ConvNeXt block tail in channels-last layout: the second pointwise linear (4C to C), per-channel layer-scale gamma, and residual addition of the block input."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "scale", "residual", "add", "pointwise"]

BATCH = 32
HEIGHT = 28
WIDTH = 28
CHANNELS = 512

VARIANTS = [
    dict(BATCH=16, HEIGHT=56, WIDTH=56, CHANNELS=256),
    dict(BATCH=9, HEIGHT=13, WIDTH=17, CHANNELS=1024),
]
SMALL = dict(BATCH=2, HEIGHT=5, WIDTH=6, CHANNELS=16)
SMALL_VARIANTS = [
    dict(BATCH=1, HEIGHT=7, WIDTH=3, CHANNELS=24),
    dict(BATCH=3, HEIGHT=4, WIDTH=5, CHANNELS=9),
]


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.pwconv2 = nn.Linear(4 * channels, channels)
        # trained-magnitude layer scale (the 1e-6 init would make the branch invisible)
        self.gamma = nn.Parameter(0.05 + 0.5 * torch.rand(channels))

    def forward(self, hidden, shortcut):
        return shortcut + self.gamma * self.pwconv2(hidden)


def get_inputs():
    hidden = torch.randn(BATCH, HEIGHT, WIDTH, 4 * CHANNELS)
    shortcut = torch.randn(BATCH, HEIGHT, WIDTH, CHANNELS)
    return [hidden, shortcut]


def get_init_inputs():
    return [CHANNELS]
