"""5x5 stride-2 transposed convolution (output padding 1), Mish, hardtanh to a fixed range and 2x2 max pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose2d", "mish", "hardtanh", "clamp", "maxpool"]

BATCH = 16
IN_CHANNELS = 96
OUT_CHANNELS = 64
HEIGHT = 64
WIDTH = 64
HARDTANH_MIN = -0.25
HARDTANH_MAX = 1.0

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=128, OUT_CHANNELS=96, HEIGHT=57, WIDTH=75),
    dict(BATCH=32, IN_CHANNELS=64, OUT_CHANNELS=40, HEIGHT=49, WIDTH=49, HARDTANH_MIN=-0.1, HARDTANH_MAX=2.0),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=4, HEIGHT=6, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=7, OUT_CHANNELS=5, HEIGHT=5, WIDTH=7),
    dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=3, HEIGHT=9, WIDTH=4, HARDTANH_MIN=-0.1, HARDTANH_MAX=2.0),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, hardtanh_min, hardtanh_max):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, 5, stride=2, padding=2, output_padding=1)
        self.hardtanh_min = hardtanh_min
        self.hardtanh_max = hardtanh_max

    def forward(self, x):
        x = F.mish(self.deconv(x))
        x = F.hardtanh(x, self.hardtanh_min, self.hardtanh_max)
        return F.max_pool2d(x, 2)


def get_inputs():
    return [2.0 * torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, HARDTANH_MIN, HARDTANH_MAX]
