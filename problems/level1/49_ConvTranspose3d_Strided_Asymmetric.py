"""Strided, padded 3D transposed convolution with separate temporal and spatial kernel sizes that upsamples video features."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose3d", "convolution", "transposed", "strided", "asymmetric", "upsample"]

BATCH = 4
IN_CHANNELS = 128
OUT_CHANNELS = 64
DEPTH = 8
HEIGHT = 32
WIDTH = 48
KERNEL_T = 3
KERNEL_S = 4
STRIDE_T = 1
STRIDE_S = 2
PAD_T = 1
PAD_S = 1

VARIANTS = [
    dict(BATCH=4, IN_CHANNELS=96, OUT_CHANNELS=80, DEPTH=9, HEIGHT=45, WIDTH=29,
         KERNEL_T=3, KERNEL_S=3, STRIDE_T=2, STRIDE_S=2, PAD_T=1, PAD_S=1),
    dict(BATCH=6, IN_CHANNELS=96, OUT_CHANNELS=64, DEPTH=5, HEIGHT=39, WIDTH=57,
         KERNEL_T=1, KERNEL_S=5, STRIDE_T=1, STRIDE_S=3, PAD_T=0, PAD_S=2),
]
SMALL = dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=4, DEPTH=3, HEIGHT=6, WIDTH=8,
             KERNEL_T=3, KERNEL_S=4, STRIDE_T=1, STRIDE_S=2, PAD_T=1, PAD_S=1)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=5, OUT_CHANNELS=3, DEPTH=5, HEIGHT=9, WIDTH=7,
         KERNEL_T=3, KERNEL_S=3, STRIDE_T=2, STRIDE_S=2, PAD_T=1, PAD_S=1),
    dict(BATCH=3, IN_CHANNELS=3, OUT_CHANNELS=5, DEPTH=5, HEIGHT=5, WIDTH=7,
         KERNEL_T=1, KERNEL_S=5, STRIDE_T=1, STRIDE_S=3, PAD_T=0, PAD_S=2),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_t, kernel_s, stride_t, stride_s, pad_t, pad_s):
        super().__init__()
        self.conv_t = nn.ConvTranspose3d(in_channels, out_channels, (kernel_t, kernel_s, kernel_s),
                                         stride=(stride_t, stride_s, stride_s),
                                         padding=(pad_t, pad_s, pad_s), bias=False)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_T, KERNEL_S, STRIDE_T, STRIDE_S, PAD_T, PAD_S]
