"""Bias-free 3x3x3 stride-2 transposed convolution (output padding 1), a learned per-channel bias add, hardswish and a mean over the channel dimension."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose3d", "bias", "hardswish", "mean"]

BATCH = 4
IN_CHANNELS = 64
OUT_CHANNELS = 64
DEPTH = 16
HEIGHT = 32
WIDTH = 32

VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=96, OUT_CHANNELS=80, DEPTH=13, HEIGHT=33, WIDTH=41),
    dict(BATCH=8, IN_CHANNELS=48, OUT_CHANNELS=120, DEPTH=9, HEIGHT=25, WIDTH=29),
]
SMALL = dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=4, DEPTH=3, HEIGHT=4, WIDTH=4)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=3, DEPTH=3, HEIGHT=5, WIDTH=3),
    dict(BATCH=2, IN_CHANNELS=7, OUT_CHANNELS=5, DEPTH=2, HEIGHT=3, WIDTH=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_channels, out_channels, 3, stride=2, padding=1, output_padding=1, bias=False)
        # an output voxel sums in_channels * (1 to 8) taps: scale so the values span all hardswish regions
        nn.init.normal_(self.deconv.weight, std=2.0 / math.sqrt(in_channels * 27 / 8))
        self.bias = nn.Parameter(0.5 * torch.randn(out_channels, 1, 1, 1))

    def forward(self, x):
        x = self.deconv(x) + self.bias
        x = F.hardswish(x)
        return x.mean(dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
