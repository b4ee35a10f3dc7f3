"""MobileNetV3 inverted-residual expansion: bias-free pointwise (1x1) convolution, BatchNorm2d with batch statistics, and hardswish."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "pointwise", "batchnorm", "hardswish"]

BATCH = 128
IN_CHANNELS = 40
OUT_CHANNELS = 240
HEIGHT = 56
WIDTH = 56

VARIANTS = [
    dict(BATCH=64, IN_CHANNELS=112, OUT_CHANNELS=672, HEIGHT=28, WIDTH=28),
    dict(BATCH=32, IN_CHANNELS=24, OUT_CHANNELS=72, HEIGHT=113, WIDTH=111),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=24, HEIGHT=5, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=15, HEIGHT=7, WIDTH=3),
    dict(BATCH=1, IN_CHANNELS=12, OUT_CHANNELS=20, HEIGHT=4, WIDTH=9),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.expand = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return F.hardswish(self.bn(self.expand(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
