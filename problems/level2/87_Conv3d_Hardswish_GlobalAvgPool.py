"""Same-padded 3x3x3 convolution over a video clip, hardswish and global average pooling over time and space."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv3d", "hardswish", "global_avgpool", "mean"]

BATCH = 8
IN_CHANNELS = 64
OUT_CHANNELS = 128
DEPTH = 16
HEIGHT = 32
WIDTH = 32

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=48, OUT_CHANNELS=96, DEPTH=9, HEIGHT=45, WIDTH=45),
    dict(BATCH=4, IN_CHANNELS=96, OUT_CHANNELS=200, DEPTH=13, HEIGHT=28, WIDTH=37),
]
SMALL = dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=6, DEPTH=4, HEIGHT=6, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=4, OUT_CHANNELS=5, DEPTH=5, HEIGHT=7, WIDTH=6),
    dict(BATCH=2, IN_CHANNELS=5, OUT_CHANNELS=9, DEPTH=3, HEIGHT=5, WIDTH=9),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        x = F.hardswish(self.conv(x))
        return x.mean(dim=(2, 3, 4))


def get_inputs():
    # scaled so the conv output covers all three hardswish regions
    return [3.0 * torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
