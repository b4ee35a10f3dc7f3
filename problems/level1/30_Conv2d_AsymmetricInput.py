"""2D convolution with a square kernel on strongly non-square (H x W) feature maps, without bias."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "convolution", "asymmetric"]

BATCH = 8
IN_CHANNELS = 64
OUT_CHANNELS = 64
HEIGHT = 96
WIDTH = 640
KERNEL_SIZE = 3
PADDING = 1

VARIANTS = [
    dict(BATCH=4, IN_CHANNELS=128, OUT_CHANNELS=96, HEIGHT=255, WIDTH=67, KERNEL_SIZE=5, PADDING=2),
    dict(BATCH=13, IN_CHANNELS=48, OUT_CHANNELS=128, HEIGHT=63, WIDTH=1001, KERNEL_SIZE=3, PADDING=0),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=6, HEIGHT=8, WIDTH=40, KERNEL_SIZE=3, PADDING=1)
SMALL_VARIANTS = [
    dict(BATCH=1, IN_CHANNELS=5, OUT_CHANNELS=3, HEIGHT=31, WIDTH=9, KERNEL_SIZE=5, PADDING=2),
    dict(BATCH=3, IN_CHANNELS=3, OUT_CHANNELS=7, HEIGHT=7, WIDTH=51, KERNEL_SIZE=3, PADDING=0),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, padding):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING]
