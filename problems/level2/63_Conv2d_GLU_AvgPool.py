"""Same-padded 3x3 convolution to twice the output channels, a gated linear unit over channels (a * sigmoid(b)) and 2x2 average pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "glu", "sigmoid", "gating", "avgpool"]

BATCH = 32
IN_CHANNELS = 96
OUT_CHANNELS = 96
HEIGHT = 64
WIDTH = 64

VARIANTS = [
    dict(BATCH=24, IN_CHANNELS=64, OUT_CHANNELS=136, HEIGHT=71, WIDTH=71),
    dict(BATCH=8, IN_CHANNELS=160, OUT_CHANNELS=80, HEIGHT=101, WIDTH=87),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=6, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=11, WIDTH=9),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=5, HEIGHT=8, WIDTH=13),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, 2 * out_channels, 3, padding=1)

    def forward(self, x):
        x = F.glu(self.conv(x), dim=1)
        return F.avg_pool2d(x, 2)


def get_inputs():
    return [2.0 * torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
