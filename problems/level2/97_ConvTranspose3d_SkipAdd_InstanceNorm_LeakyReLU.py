"""3D U-Net decoder step: 2x2x2 stride-2 transposed convolution, addition of the encoder skip tensor, affine instance normalization and LeakyReLU(0.01)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose3d", "residual", "instancenorm", "leaky_relu"]

BATCH = 4
IN_CHANNELS = 128
OUT_CHANNELS = 64
DEPTH = 32
HEIGHT = 32
WIDTH = 32
NEGATIVE_SLOPE = 0.01

VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=256, OUT_CHANNELS=128, DEPTH=20, HEIGHT=29, WIDTH=29),
    dict(BATCH=6, IN_CHANNELS=64, OUT_CHANNELS=32, DEPTH=27, HEIGHT=41, WIDTH=37),
]
SMALL = dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=4, DEPTH=3, HEIGHT=4, WIDTH=4)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=3, DEPTH=3, HEIGHT=5, WIDTH=3),
    dict(BATCH=2, IN_CHANNELS=7, OUT_CHANNELS=5, DEPTH=2, HEIGHT=3, WIDTH=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, negative_slope):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_channels, out_channels, 2, stride=2)
        # every output voxel sums in_channels taps: unit-variance output, comparable to the skip tensor
        nn.init.normal_(self.deconv.weight, std=1.0 / math.sqrt(in_channels))
        self.norm = nn.InstanceNorm3d(out_channels, eps=1e-5, affine=True)
        with torch.no_grad():
            self.norm.weight.add_(0.2 * torch.randn(out_channels))
            self.norm.bias.add_(0.2 * torch.randn(out_channels))
        self.negative_slope = negative_slope

    def forward(self, x, skip):
        x = self.deconv(x) + skip
        x = self.norm(x)
        return F.leaky_relu(x, self.negative_slope)


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)
    skip = torch.randn(BATCH, OUT_CHANNELS, 2 * DEPTH, 2 * HEIGHT, 2 * WIDTH)
    return [x, skip]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, NEGATIVE_SLOPE]
