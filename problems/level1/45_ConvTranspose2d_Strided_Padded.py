"""Strided, padded 2D transposed convolution that upsamples feature maps, as in a decoder or GAN generator."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose2d", "convolution", "transposed", "strided", "padded", "upsample"]

BATCH = 16
IN_CHANNELS = 256
OUT_CHANNELS = 128
SIZE = 64
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 1
OUTPUT_PADDING = 0

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=192, OUT_CHANNELS=96, SIZE=75, KERNEL_SIZE=3, STRIDE=2, PADDING=1,
         OUTPUT_PADDING=1),
    dict(BATCH=4, IN_CHANNELS=320, OUT_CHANNELS=160, SIZE=41, KERNEL_SIZE=5, STRIDE=3, PADDING=2,
         OUTPUT_PADDING=2),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=6, SIZE=8, KERNEL_SIZE=4, STRIDE=2, PADDING=1,
             OUTPUT_PADDING=0)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=5, OUT_CHANNELS=7, SIZE=13, KERNEL_SIZE=3, STRIDE=2, PADDING=1,
         OUTPUT_PADDING=1),
    dict(BATCH=3, IN_CHANNELS=7, OUT_CHANNELS=3, SIZE=9, KERNEL_SIZE=5, STRIDE=3, PADDING=2,
         OUTPUT_PADDING=2),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, output_padding=output_padding)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING, OUTPUT_PADDING]
