"""Same-padded 3x3 convolution, group normalization, ReLU and global max pooling over the spatial dimensions."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "groupnorm", "relu", "global_maxpool", "max"]

BATCH = 32
IN_CHANNELS = 128
OUT_CHANNELS = 256
HEIGHT = 48
WIDTH = 48
GROUPS = 32

VARIANTS = [
    dict(BATCH=24, IN_CHANNELS=96, OUT_CHANNELS=144, HEIGHT=63, WIDTH=63, GROUPS=12),
    dict(BATCH=8, IN_CHANNELS=192, OUT_CHANNELS=390, HEIGHT=41, WIDTH=53, GROUPS=30),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=10, WIDTH=10, GROUPS=2)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=9, HEIGHT=11, WIDTH=9, GROUPS=3),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=10, HEIGHT=7, WIDTH=12, GROUPS=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.norm = nn.GroupNorm(groups, out_channels)
        with torch.no_grad():
            self.norm.weight.add_(0.2 * torch.randn(out_channels))
            self.norm.bias.add_(0.2 * torch.randn(out_channels))

    def forward(self, x):
        x = F.relu(self.norm(self.conv(x)))
        return torch.amax(x, dim=(2, 3))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, GROUPS]
