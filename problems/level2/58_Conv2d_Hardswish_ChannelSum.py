"""Same-padded 3x3 convolution, hardswish and a sum over the channel dimension into a one-channel map."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "hardswish", "sum"]

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 192
HEIGHT = 64
WIDTH = 64

VARIANTS = [
    dict(BATCH=24, IN_CHANNELS=80, OUT_CHANNELS=112, HEIGHT=77, WIDTH=77),
    dict(BATCH=8, IN_CHANNELS=128, OUT_CHANNELS=321, HEIGHT=50, WIDTH=66),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=11, WIDTH=9),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=13, HEIGHT=8, WIDTH=12),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        x = F.hardswish(self.conv(x))
        return x.sum(dim=1, keepdim=True)


def get_inputs():
    # scaled so the conv output covers all three hardswish regions (< -3, [-3, 3], > 3)
    return [3.0 * torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
