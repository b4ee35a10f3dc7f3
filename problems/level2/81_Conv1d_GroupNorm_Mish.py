"""Diffusion 1D U-Net block: same-padded 1D convolution, group normalization and Mish."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv1d", "groupnorm", "mish"]

BATCH = 32
IN_CHANNELS = 256
OUT_CHANNELS = 256
LENGTH = 1024
KERNEL_SIZE = 5
GROUPS = 8

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=128, OUT_CHANNELS=384, LENGTH=2047, GROUPS=12),
    dict(BATCH=64, IN_CHANNELS=320, OUT_CHANNELS=160, LENGTH=515, KERNEL_SIZE=3, GROUPS=10),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=8, LENGTH=64, GROUPS=4)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=9, LENGTH=45, GROUPS=3),
    dict(BATCH=2, IN_CHANNELS=7, OUT_CHANNELS=10, LENGTH=71, KERNEL_SIZE=3, GROUPS=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.norm = nn.GroupNorm(groups, out_channels)
        with torch.no_grad():
            self.norm.weight.add_(0.2 * torch.randn(out_channels))
            self.norm.bias.add_(0.2 * torch.randn(out_channels))

    def forward(self, x):
        return F.mish(self.norm(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, GROUPS]
