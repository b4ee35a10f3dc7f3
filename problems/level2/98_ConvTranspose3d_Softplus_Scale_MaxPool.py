"""3x3x3 stride-2 transposed convolution (output padding 1), softplus, a constant scale and 2x2x2 max pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose3d", "softplus", "scale", "maxpool"]

BATCH = 8
IN_CHANNELS = 64
OUT_CHANNELS = 32
DEPTH = 16
HEIGHT = 32
WIDTH = 32
SCALING_FACTOR = 2.0

VARIANTS = [
    dict(BATCH=4, IN_CHANNELS=96, OUT_CHANNELS=48, DEPTH=15, HEIGHT=27, WIDTH=33),
    dict(BATCH=16, IN_CHANNELS=40, OUT_CHANNELS=20, DEPTH=11, HEIGHT=35, WIDTH=35, SCALING_FACTOR=0.5),
]
SMALL = dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=4, DEPTH=3, HEIGHT=4, WIDTH=4)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=3, DEPTH=3, HEIGHT=5, WIDTH=3),
    dict(BATCH=2, IN_CHANNELS=7, OUT_CHANNELS=5, DEPTH=2, HEIGHT=3, WIDTH=5, SCALING_FACTOR=0.5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, scaling_factor):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_channels, out_channels, 3, stride=2, padding=1, output_padding=1)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = F.softplus(self.deconv(x))
        x = x * self.scaling_factor
        return F.max_pool3d(x, 2)


def get_inputs():
    return [3.0 * torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, SCALING_FACTOR]
