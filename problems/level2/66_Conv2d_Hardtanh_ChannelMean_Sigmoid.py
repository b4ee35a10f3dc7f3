"""Same-padded 3x3 convolution, hardtanh, a mean over the channel dimension and a sigmoid, giving a one-channel spatial attention map."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "hardtanh", "clamp", "mean", "sigmoid"]

BATCH = 32
IN_CHANNELS = 96
OUT_CHANNELS = 64
HEIGHT = 96
WIDTH = 96

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=128, OUT_CHANNELS=48, HEIGHT=111, WIDTH=97),
    dict(BATCH=48, IN_CHANNELS=64, OUT_CHANNELS=100, HEIGHT=65, WIDTH=65),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=11, WIDTH=9),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=5, HEIGHT=8, WIDTH=13),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        x = F.hardtanh(self.conv(x), -1.0, 1.0)
        x = x.mean(dim=1, keepdim=True)
        return torch.sigmoid(x)


def get_inputs():
    # scaled so that a good share of the conv outputs saturate the hardtanh
    return [2.5 * torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
