"""Grouped, strided 3D transposed convolution that doubles the resolution of volumetric feature maps."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose3d", "convolution", "transposed", "grouped", "strided", "upsample"]

BATCH = 4
IN_CHANNELS = 128
OUT_CHANNELS = 128
SIZE = 24
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 1
GROUPS = 4

VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=96, OUT_CHANNELS=144, SIZE=29, KERNEL_SIZE=3, STRIDE=2, PADDING=1,
         GROUPS=3),
    dict(BATCH=6, IN_CHANNELS=160, OUT_CHANNELS=80, SIZE=27, KERNEL_SIZE=4, STRIDE=2, PADDING=1,
         GROUPS=8),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=8, SIZE=5, KERNEL_SIZE=4, STRIDE=2, PADDING=1,
             GROUPS=4)
SMALL_VARIANTS = [
    dict(BATCH=1, IN_CHANNELS=9, OUT_CHANNELS=6, SIZE=5, KERNEL_SIZE=3, STRIDE=2, PADDING=1,
         GROUPS=3),
    dict(BATCH=3, IN_CHANNELS=10, OUT_CHANNELS=5, SIZE=5, KERNEL_SIZE=4, STRIDE=2, PADDING=1,
         GROUPS=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, groups):
        super().__init__()
        self.conv_t = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, groups=groups)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING, GROUPS]
