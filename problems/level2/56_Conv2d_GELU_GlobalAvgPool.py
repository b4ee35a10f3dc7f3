"""Same-padded 3x3 convolution, exact (erf) GELU and global average pooling over the spatial dimensions."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "gelu", "global_avgpool", "mean"]

BATCH = 32
IN_CHANNELS = 128
OUT_CHANNELS = 256
HEIGHT = 32
WIDTH = 32

VARIANTS = [
    dict(BATCH=50, IN_CHANNELS=96, OUT_CHANNELS=320, HEIGHT=27, WIDTH=27),
    dict(BATCH=16, IN_CHANNELS=200, OUT_CHANNELS=250, HEIGHT=47, WIDTH=31),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=8, WIDTH=8)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=9, WIDTH=9),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=6, HEIGHT=11, WIDTH=7),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        x = F.gelu(self.conv(x))
        return x.mean(dim=(2, 3))


def get_inputs():
    return [2.0 * torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
