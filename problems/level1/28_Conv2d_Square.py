"""Standard 2D convolution with a square kernel on square images."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "convolution"]

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
SIZE = 128
KERNEL_SIZE = 3
PADDING = 1

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=128, OUT_CHANNELS=96, SIZE=201, KERNEL_SIZE=3, PADDING=0),
    dict(BATCH=61, IN_CHANNELS=48, OUT_CHANNELS=80, SIZE=63, KERNEL_SIZE=5, PADDING=2),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, SIZE=16, KERNEL_SIZE=3, PADDING=1)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=5, SIZE=17, KERNEL_SIZE=3, PADDING=0),
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, SIZE=11, KERNEL_SIZE=5, PADDING=2),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, padding):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING]
