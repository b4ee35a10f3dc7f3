"""Same-padded 3x3 convolution and ReLU, then channel gating by a sigmoid of the per-channel spatial mean under a learned affine map."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "relu", "global_avgpool", "sigmoid", "gating"]

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 80
WIDTH = 80

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=96, OUT_CHANNELS=192, HEIGHT=57, WIDTH=57),
    dict(BATCH=40, IN_CHANNELS=48, OUT_CHANNELS=72, HEIGHT=99, WIDTH=75),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=11, WIDTH=9),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=6, HEIGHT=7, WIDTH=12),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.gate_weight = nn.Parameter(2.0 * torch.randn(out_channels))
        self.gate_bias = nn.Parameter(0.5 * torch.randn(out_channels))

    def forward(self, x):
        x = F.relu(self.conv(x))
        pooled = x.mean(dim=(2, 3))  # (N, C)
        gate = torch.sigmoid(pooled * self.gate_weight + self.gate_bias)
        return x * gate[:, :, None, None]


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
