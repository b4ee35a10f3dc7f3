"""3D convolution with a (KD x KH x KW) kernel of unequal sides on non-cubic (D x H x W) volumes."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv3d", "convolution", "asymmetric"]

BATCH = 4
IN_CHANNELS = 32
OUT_CHANNELS = 32
DEPTH = 16
HEIGHT = 64
WIDTH = 96
KERNEL_D = 3
KERNEL_H = 5
KERNEL_W = 7
PAD_D = 1
PAD_H = 2
PAD_W = 3

VARIANTS = [
    dict(BATCH=5, IN_CHANNELS=48, OUT_CHANNELS=40, DEPTH=9, HEIGHT=77, WIDTH=101,
         KERNEL_D=1, KERNEL_H=3, KERNEL_W=5, PAD_D=0, PAD_H=1, PAD_W=2),
    dict(BATCH=3, IN_CHANNELS=64, OUT_CHANNELS=96, DEPTH=31, HEIGHT=47, WIDTH=33,
         KERNEL_D=5, KERNEL_H=3, KERNEL_W=1, PAD_D=0, PAD_H=0, PAD_W=0),
]
SMALL = dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=4, DEPTH=4, HEIGHT=8, WIDTH=12,
             KERNEL_D=3, KERNEL_H=5, KERNEL_W=7, PAD_D=1, PAD_H=2, PAD_W=3)
SMALL_VARIANTS = [
    dict(BATCH=1, IN_CHANNELS=5, OUT_CHANNELS=3, DEPTH=3, HEIGHT=11, WIDTH=13,
         KERNEL_D=1, KERNEL_H=3, KERNEL_W=5, PAD_D=0, PAD_H=1, PAD_W=2),
    dict(BATCH=3, IN_CHANNELS=2, OUT_CHANNELS=5, DEPTH=9, HEIGHT=7, WIDTH=5,
         KERNEL_D=5, KERNEL_H=3, KERNEL_W=1, PAD_D=0, PAD_H=0, PAD_W=0),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_d, kernel_h, kernel_w, pad_d, pad_h, pad_w):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, (kernel_d, kernel_h, kernel_w),
                              padding=(pad_d, pad_h, pad_w), bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_D, KERNEL_H, KERNEL_W, PAD_D, PAD_H, PAD_W]
