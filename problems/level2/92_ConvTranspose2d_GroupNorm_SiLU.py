"""Decoder upsampling block: 3x3 stride-2 transposed convolution (output padding 1, doubling the resolution), group normalization and SiLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose2d", "groupnorm", "silu"]

BATCH = 16
IN_CHANNELS = 256
OUT_CHANNELS = 128
HEIGHT = 48
WIDTH = 48
GROUPS = 32

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=320, OUT_CHANNELS=160, HEIGHT=41, WIDTH=53, GROUPS=20),
    dict(BATCH=32, IN_CHANNELS=128, OUT_CHANNELS=96, HEIGHT=63, WIDTH=63, GROUPS=24),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=8, HEIGHT=6, WIDTH=6, GROUPS=4)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=7, OUT_CHANNELS=9, HEIGHT=5, WIDTH=7, GROUPS=3),
    dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=10, HEIGHT=9, WIDTH=4, GROUPS=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, 3, stride=2, padding=1, output_padding=1)
        self.norm = nn.GroupNorm(groups, out_channels)
        with torch.no_grad():
            self.norm.weight.add_(0.2 * torch.randn(out_channels))
            self.norm.bias.add_(0.2 * torch.randn(out_channels))

    def forward(self, x):
        return F.silu(self.norm(self.deconv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, GROUPS]
