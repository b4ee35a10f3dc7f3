"""Darknet-style downsampling block: 3x3 stride-2 convolution, batch normalization with batch statistics and LeakyReLU(0.1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "batchnorm", "leaky_relu"]

BATCH = 32
IN_CHANNELS = 128
OUT_CHANNELS = 256
HEIGHT = 104
WIDTH = 104
NEGATIVE_SLOPE = 0.1
EPS = 1e-5

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=64, OUT_CHANNELS=128, HEIGHT=209, WIDTH=209),
    dict(BATCH=48, IN_CHANNELS=256, OUT_CHANNELS=510, HEIGHT=39, WIDTH=53),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=13, WIDTH=11),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=6, HEIGHT=9, WIDTH=16),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, negative_slope, eps):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1, bias=False)
        self.bn_weight = nn.Parameter(1.0 + 0.2 * torch.randn(out_channels))
        self.bn_bias = nn.Parameter(0.2 * torch.randn(out_channels))
        self.negative_slope = negative_slope
        self.eps = eps

    def forward(self, x):
        x = self.conv(x)
        # training-mode batch norm: statistics over (N, H, W) of this batch, no running stats kept
        x = F.batch_norm(x, None, None, self.bn_weight, self.bn_bias, training=True, eps=self.eps)
        return F.leaky_relu(x, self.negative_slope)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, NEGATIVE_SLOPE, EPS]
