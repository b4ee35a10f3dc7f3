"""Valid 3x3x3 convolution, Mish, a clamp to a fixed range and 2x2x2 average pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv3d", "mish", "clamp", "avgpool"]

BATCH = 8
IN_CHANNELS = 32
OUT_CHANNELS = 48
DEPTH = 24
HEIGHT = 56
WIDTH = 56
CLAMP_MIN = -0.2
CLAMP_MAX = 1.0

VARIANTS = [
    dict(BATCH=4, IN_CHANNELS=40, OUT_CHANNELS=64, DEPTH=19, HEIGHT=67, WIDTH=67),
    dict(BATCH=16, IN_CHANNELS=16, OUT_CHANNELS=36, DEPTH=33, HEIGHT=41, WIDTH=49, CLAMP_MIN=-0.1, CLAMP_MAX=2.0),
]
SMALL = dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=6, DEPTH=6, HEIGHT=6, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=4, OUT_CHANNELS=5, DEPTH=5, HEIGHT=7, WIDTH=6),
    dict(BATCH=2, IN_CHANNELS=5, OUT_CHANNELS=7, DEPTH=6, HEIGHT=5, WIDTH=9, CLAMP_MIN=-0.1, CLAMP_MAX=2.0),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, clamp_min, clamp_max):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3)
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = F.mish(self.conv(x))
        x = torch.clamp(x, self.clamp_min, self.clamp_max)
        return F.avg_pool3d(x, 2)


def get_inputs():
    return [2.0 * torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, CLAMP_MIN, CLAMP_MAX]
