"""Group normalisation of a batch of feature maps (channels split into groups) with a learned per-channel affine."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["groupnorm", "normalization", "reduction"]

BATCH = 32
CHANNELS = 256
GROUPS = 32
HEIGHT = 96
WIDTH = 96
EPS = 1e-5

VARIANTS = [
    dict(BATCH=11, CHANNELS=350, GROUPS=7, HEIGHT=127, WIDTH=129),
    dict(BATCH=64, CHANNELS=96, GROUPS=24, HEIGHT=101, WIDTH=99),
]
SMALL = dict(BATCH=2, CHANNELS=16, GROUPS=4, HEIGHT=10, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=15, GROUPS=5, HEIGHT=7, WIDTH=9),
    dict(BATCH=1, CHANNELS=12, GROUPS=3, HEIGHT=13, WIDTH=11),
]


class Model(nn.Module):
    def __init__(self, groups, channels, eps):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, eps=eps)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(channels))
            self.norm.bias.copy_(0.2 * torch.randn(channels))

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 2.0 - 0.7]


def get_init_inputs():
    return [GROUPS, CHANNELS, EPS]
