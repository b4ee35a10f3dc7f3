"""Depthwise 3D convolution (groups equal to channels) over volumetric feature maps."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv3d", "depthwise", "convolution"]

BATCH = 16
CHANNELS = 64
DEPTH = 32
HEIGHT = 64
WIDTH = 64
KERNEL_SIZE = 3
PADDING = 1

VARIANTS = [
    dict(BATCH=6, CHANNELS=97, DEPTH=17, HEIGHT=81, WIDTH=73, KERNEL_SIZE=5, PADDING=2),
    dict(BATCH=12, CHANNELS=128, DEPTH=24, HEIGHT=57, WIDTH=57, KERNEL_SIZE=3, PADDING=0),
]
SMALL = dict(BATCH=2, CHANNELS=4, DEPTH=6, HEIGHT=8, WIDTH=8, KERNEL_SIZE=3, PADDING=1)
SMALL_VARIANTS = [
    dict(BATCH=1, CHANNELS=5, DEPTH=7, HEIGHT=9, WIDTH=11, KERNEL_SIZE=5, PADDING=2),
    dict(BATCH=3, CHANNELS=3, DEPTH=5, HEIGHT=13, WIDTH=7, KERNEL_SIZE=3, PADDING=0),
]


class Model(nn.Module):
    def __init__(self, channels, kernel_size, padding):
        super().__init__()
        self.conv = nn.Conv3d(channels, channels, kernel_size, padding=padding, groups=channels)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL_SIZE, PADDING]
