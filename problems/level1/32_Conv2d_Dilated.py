"""Dilated (atrous) 3x3 2D convolution, as in semantic-segmentation backbones."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "convolution", "dilated"]

BATCH = 16
IN_CHANNELS = 256
OUT_CHANNELS = 256
SIZE = 64
KERNEL_SIZE = 3
DILATION = 2
PADDING = 2

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=320, OUT_CHANNELS=192, SIZE=97, KERNEL_SIZE=3, DILATION=3, PADDING=3),
    dict(BATCH=24, IN_CHANNELS=128, OUT_CHANNELS=256, SIZE=45, KERNEL_SIZE=3, DILATION=4, PADDING=0),
]
SMALL = dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=8, SIZE=16, KERNEL_SIZE=3, DILATION=2, PADDING=2)
SMALL_VARIANTS = [
    dict(BATCH=1, IN_CHANNELS=5, OUT_CHANNELS=7, SIZE=19, KERNEL_SIZE=3, DILATION=3, PADDING=3),
    dict(BATCH=3, IN_CHANNELS=4, OUT_CHANNELS=5, SIZE=21, KERNEL_SIZE=3, DILATION=4, PADDING=0),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, dilation, padding):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding,
                              dilation=dilation)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, DILATION, PADDING]
