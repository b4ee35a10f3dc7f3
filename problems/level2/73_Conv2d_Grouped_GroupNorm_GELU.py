"""Grouped same-padded 3x3 convolution (ResNeXt-style), group normalization and exact GELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "grouped", "groupnorm", "gelu"]

BATCH = 32
IN_CHANNELS = 256
OUT_CHANNELS = 256
HEIGHT = 56
WIDTH = 56
CONV_GROUPS = 8
NORM_GROUPS = 32

VARIANTS = [
    dict(BATCH=48, IN_CHANNELS=192, OUT_CHANNELS=288, HEIGHT=45, WIDTH=45, CONV_GROUPS=6, NORM_GROUPS=12),
    dict(BATCH=32, IN_CHANNELS=120, OUT_CHANNELS=360, HEIGHT=97, WIDTH=77, CONV_GROUPS=3, NORM_GROUPS=9),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=8, HEIGHT=10, WIDTH=10, CONV_GROUPS=2, NORM_GROUPS=4)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=6, OUT_CHANNELS=9, HEIGHT=11, WIDTH=9, CONV_GROUPS=3, NORM_GROUPS=3),
    dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=10, HEIGHT=7, WIDTH=12, CONV_GROUPS=2, NORM_GROUPS=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, conv_groups, norm_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, groups=conv_groups, bias=False)
        self.norm = nn.GroupNorm(norm_groups, out_channels)
        with torch.no_grad():
            self.norm.weight.add_(0.2 * torch.randn(out_channels))
            self.norm.bias.add_(0.2 * torch.randn(out_channels))

    def forward(self, x):
        return F.gelu(self.norm(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, CONV_GROUPS, NORM_GROUPS]
