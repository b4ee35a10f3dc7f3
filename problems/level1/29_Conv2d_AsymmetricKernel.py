"""2D convolution with a rectangular (KH x KW) kernel and per-axis padding on square images."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "convolution", "asymmetric"]

BATCH = 16
IN_CHANNELS = 96
OUT_CHANNELS = 128
SIZE = 96
KERNEL_H = 3
KERNEL_W = 7
PAD_H = 1
PAD_W = 3

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=64, OUT_CHANNELS=192, SIZE=127, KERNEL_H=1, KERNEL_W=7, PAD_H=0, PAD_W=3),
    dict(BATCH=32, IN_CHANNELS=160, OUT_CHANNELS=96, SIZE=57, KERNEL_H=5, KERNEL_W=3, PAD_H=0, PAD_W=0),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=6, SIZE=16, KERNEL_H=3, KERNEL_W=7, PAD_H=1, PAD_W=3)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=5, SIZE=19, KERNEL_H=1, KERNEL_W=7, PAD_H=0, PAD_W=3),
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=4, SIZE=13, KERNEL_H=5, KERNEL_W=3, PAD_H=0, PAD_W=0),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_h, kernel_w, pad_h, pad_w):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, (kernel_h, kernel_w), padding=(pad_h, pad_w))

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_H, KERNEL_W, PAD_H, PAD_W]
