"""Standard 3D convolution with a cubic kernel on cubic volumes."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv3d", "convolution"]

BATCH = 8
IN_CHANNELS = 32
OUT_CHANNELS = 48
SIZE = 48
KERNEL_SIZE = 3
PADDING = 1

VARIANTS = [
    dict(BATCH=4, IN_CHANNELS=16, OUT_CHANNELS=64, SIZE=63, KERNEL_SIZE=3, PADDING=0),
    dict(BATCH=6, IN_CHANNELS=48, OUT_CHANNELS=32, SIZE=29, KERNEL_SIZE=5, PADDING=2),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=6, SIZE=8, KERNEL_SIZE=3, PADDING=1)
SMALL_VARIANTS = [
    dict(BATCH=1, IN_CHANNELS=3, OUT_CHANNELS=5, SIZE=9, KERNEL_SIZE=3, PADDING=0),
    dict(BATCH=3, IN_CHANNELS=2, OUT_CHANNELS=3, SIZE=7, KERNEL_SIZE=5, PADDING=2),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, padding):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=padding)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING]
