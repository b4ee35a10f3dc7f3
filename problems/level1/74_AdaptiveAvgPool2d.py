"""Adaptive 2D average pooling to a fixed output grid from a spatial size that does not divide evenly."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["adaptive_avg_pool2d", "pooling"]

BATCH = 256
CHANNELS = 1024
HEIGHT = 23
WIDTH = 23
OUT_HEIGHT = 7
OUT_WIDTH = 7

VARIANTS = [
    dict(BATCH=160, CHANNELS=2048, HEIGHT=17, WIDTH=19, OUT_HEIGHT=5, OUT_WIDTH=3),
    dict(BATCH=48, CHANNELS=512, HEIGHT=65, WIDTH=63, OUT_HEIGHT=6, OUT_WIDTH=6),
]
SMALL = dict(BATCH=2, CHANNELS=16, HEIGHT=23, WIDTH=23)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=5, HEIGHT=17, WIDTH=19, OUT_HEIGHT=5, OUT_WIDTH=3),
    dict(BATCH=1, CHANNELS=7, HEIGHT=13, WIDTH=11, OUT_HEIGHT=6, OUT_WIDTH=6),
]


class Model(nn.Module):
    def __init__(self, out_height, out_width):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d((out_height, out_width))

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 2.0 + 0.5]


def get_init_inputs():
    return [OUT_HEIGHT, OUT_WIDTH]
