"""Strided, padded 3D convolution over video clips with separate temporal and spatial kernel, stride and padding."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv3d", "convolution", "strided", "padded", "video"]

BATCH = 8
IN_CHANNELS = 3
OUT_CHANNELS = 64
FRAMES = 16
HEIGHT = 224
WIDTH = 224
KERNEL_T = 3
KERNEL_S = 7
STRIDE_T = 1
STRIDE_S = 2
PAD_T = 1
PAD_S = 3

VARIANTS = [
    dict(BATCH=4, IN_CHANNELS=16, OUT_CHANNELS=48, FRAMES=21, HEIGHT=99, WIDTH=131,
         KERNEL_T=3, KERNEL_S=5, STRIDE_T=2, STRIDE_S=2, PAD_T=1, PAD_S=2),
    dict(BATCH=6, IN_CHANNELS=3, OUT_CHANNELS=64, FRAMES=8, HEIGHT=189, WIDTH=253,
         KERNEL_T=5, KERNEL_S=7, STRIDE_T=1, STRIDE_S=2, PAD_T=2, PAD_S=3),
]
SMALL = dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=8, FRAMES=4, HEIGHT=16, WIDTH=16,
             KERNEL_T=3, KERNEL_S=7, STRIDE_T=1, STRIDE_S=2, PAD_T=1, PAD_S=3)
SMALL_VARIANTS = [
    dict(BATCH=1, IN_CHANNELS=4, OUT_CHANNELS=5, FRAMES=7, HEIGHT=13, WIDTH=17,
         KERNEL_T=3, KERNEL_S=5, STRIDE_T=2, STRIDE_S=2, PAD_T=1, PAD_S=2),
    dict(BATCH=3, IN_CHANNELS=3, OUT_CHANNELS=4, FRAMES=5, HEIGHT=15, WIDTH=11,
         KERNEL_T=5, KERNEL_S=7, STRIDE_T=1, STRIDE_S=2, PAD_T=2, PAD_S=3),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_t, kernel_s, stride_t, stride_s, pad_t, pad_s):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, (kernel_t, kernel_s, kernel_s),
                              stride=(stride_t, stride_s, stride_s),
                              padding=(pad_t, pad_s, pad_s), bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, FRAMES, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_T, KERNEL_S, STRIDE_T, STRIDE_S, PAD_T, PAD_S]
