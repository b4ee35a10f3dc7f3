"""Same-padded 3x3 convolution, group normalization, SiLU and 2x2 max pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "groupnorm", "silu", "maxpool"]

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 64
WIDTH = 64
GROUPS = 16

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=96, OUT_CHANNELS=192, HEIGHT=67, WIDTH=67, GROUPS=32),
    dict(BATCH=48, IN_CHANNELS=48, OUT_CHANNELS=80, HEIGHT=90, WIDTH=55, GROUPS=10),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=10, WIDTH=10, GROUPS=4)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=6, HEIGHT=11, WIDTH=9, GROUPS=3),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=10, HEIGHT=7, WIDTH=12, GROUPS=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.norm = nn.GroupNorm(groups, out_channels)
        with torch.no_grad():
            self.norm.weight.add_(0.1 * torch.randn(out_channels))
            self.norm.bias.add_(0.1 * torch.randn(out_channels))

    def forward(self, x):
        x = self.norm(self.conv(x))
        x = F.silu(x)
        return F.max_pool2d(x, 2)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, GROUPS]
