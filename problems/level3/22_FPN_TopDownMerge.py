"""Feature pyramid network neck: 1x1 lateral convs bring four backbone levels to a common width, a top-down pathway adds nearest-upsampled coarser levels, 3x3 convs smooth every level, and the levels are flattened and concatenated along the spatial axis."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv2d", "interpolate", "add", "concat", "fpn"]

BATCH = 8
HEIGHT = 64
WIDTH = 64
IN_CHANNELS = [256, 512, 1024, 2048]
OUT_CHANNELS = 256

VARIANTS = [
    dict(BATCH=4, HEIGHT=100, WIDTH=75, IN_CHANNELS=[256, 512, 1024, 2048], OUT_CHANNELS=256),
    dict(BATCH=6, HEIGHT=56, WIDTH=81, IN_CHANNELS=[64, 128, 320, 512, 768], OUT_CHANNELS=192),
]
SMALL = dict(BATCH=1, HEIGHT=16, WIDTH=16, IN_CHANNELS=[4, 8, 16, 32], OUT_CHANNELS=8)
SMALL_VARIANTS = [
    dict(BATCH=2, HEIGHT=13, WIDTH=11, IN_CHANNELS=[3, 6, 12], OUT_CHANNELS=5),
    dict(BATCH=1, HEIGHT=19, WIDTH=15, IN_CHANNELS=[5, 7, 9, 11], OUT_CHANNELS=6),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(c, out_channels, 1) for c in in_channels)
        self.smooth = nn.ModuleList(nn.Conv2d(out_channels, out_channels, 3, padding=1) for _ in in_channels)

    def forward(self, *features):
        # features: finest (highest resolution) level first.
        laterals = [conv(f) for conv, f in zip(self.lateral, features)]
        merged = [laterals[-1]]
        for lat in reversed(laterals[:-1]):
            top = F.interpolate(merged[0], size=lat.shape[-2:], mode="nearest")
            merged.insert(0, lat + top)
        outs = [conv(m).flatten(2) for conv, m in zip(self.smooth, merged)]
        return torch.cat(outs, dim=2)


def get_inputs():
    feats = []
    h, w = HEIGHT, WIDTH
    for c in IN_CHANNELS:
        feats.append(torch.randn(BATCH, c, h, w))
        h, w = (h + 1) // 2, (w + 1) // 2
    return feats


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
