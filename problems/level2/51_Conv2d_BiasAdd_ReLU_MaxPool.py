"""Bias-free 2D convolution followed by a learned per-channel bias add, ReLU and 2x2 max pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "bias", "relu", "maxpool"]

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 96
WIDTH = 96
KERNEL_SIZE = 3
POOL_SIZE = 2

VARIANTS = [
    dict(BATCH=17, IN_CHANNELS=96, OUT_CHANNELS=160, HEIGHT=75, WIDTH=83),
    dict(BATCH=64, IN_CHANNELS=32, OUT_CHANNELS=48, HEIGHT=127, WIDTH=127, KERNEL_SIZE=5),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=11, WIDTH=13),
    dict(BATCH=1, IN_CHANNELS=3, OUT_CHANNELS=6, HEIGHT=9, WIDTH=10, KERNEL_SIZE=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, pool_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, bias=False)
        self.bias = nn.Parameter(0.2 * torch.randn(out_channels, 1, 1))
        self.pool_size = pool_size

    def forward(self, x):
        x = self.conv(x) + self.bias
        x = F.relu(x)
        return F.max_pool2d(x, self.pool_size)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, POOL_SIZE]
