"""2D transposed convolution with a rectangular kernel on non-square feature maps, with per-axis stride."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose2d", "convolution", "transposed", "asymmetric"]

BATCH = 16
IN_CHANNELS = 128
OUT_CHANNELS = 64
HEIGHT = 48
WIDTH = 160
KERNEL_H = 3
KERNEL_W = 5
STRIDE_H = 1
STRIDE_W = 2

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=96, OUT_CHANNELS=129, HEIGHT=123, WIDTH=45, KERNEL_H=5, KERNEL_W=3,
         STRIDE_H=2, STRIDE_W=1),
    dict(BATCH=24, IN_CHANNELS=160, OUT_CHANNELS=48, HEIGHT=33, WIDTH=257, KERNEL_H=1, KERNEL_W=7,
         STRIDE_H=1, STRIDE_W=3),
]
SMALL = dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=4, HEIGHT=6, WIDTH=20, KERNEL_H=3, KERNEL_W=5,
             STRIDE_H=1, STRIDE_W=2)
SMALL_VARIANTS = [
    dict(BATCH=1, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=15, WIDTH=7, KERNEL_H=5, KERNEL_W=3,
         STRIDE_H=2, STRIDE_W=1),
    dict(BATCH=3, IN_CHANNELS=7, OUT_CHANNELS=3, HEIGHT=5, WIDTH=33, KERNEL_H=1, KERNEL_W=7,
         STRIDE_H=1, STRIDE_W=3),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_h, kernel_w, stride_h, stride_w):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, (kernel_h, kernel_w),
                                         stride=(stride_h, stride_w), bias=False)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_H, KERNEL_W, STRIDE_H, STRIDE_W]
