"""3D U-Net residual unit: same-padded 3x3x3 convolution, group normalization, SiLU and a residual add of the unit input."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv3d", "groupnorm", "silu", "residual"]

BATCH = 4
CHANNELS = 64
DEPTH = 16
HEIGHT = 64
WIDTH = 64
GROUPS = 16

VARIANTS = [
    dict(BATCH=2, CHANNELS=96, DEPTH=21, HEIGHT=45, WIDTH=45, GROUPS=24),
    dict(BATCH=8, CHANNELS=40, DEPTH=12, HEIGHT=63, WIDTH=75, GROUPS=8),
]
SMALL = dict(BATCH=2, CHANNELS=4, DEPTH=6, HEIGHT=6, WIDTH=6, GROUPS=2)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=6, DEPTH=5, HEIGHT=7, WIDTH=5, GROUPS=3),
    dict(BATCH=2, CHANNELS=5, DEPTH=4, HEIGHT=5, WIDTH=9, GROUPS=5),
]


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.conv = nn.Conv3d(channels, channels, 3, padding=1)
        self.norm = nn.GroupNorm(groups, channels)
        with torch.no_grad():
            self.norm.weight.add_(0.2 * torch.randn(channels))
            self.norm.bias.add_(0.2 * torch.randn(channels))

    def forward(self, x):
        y = F.silu(self.norm(self.conv(x)))
        return x + y


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, GROUPS]
