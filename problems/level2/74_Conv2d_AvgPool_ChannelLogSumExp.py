"""Same-padded 3x3 convolution, 2x2 average pooling and a logsumexp over the channel dimension."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "avgpool", "logsumexp"]

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 96
WIDTH = 96

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=96, OUT_CHANNELS=200, HEIGHT=81, WIDTH=81),
    dict(BATCH=48, IN_CHANNELS=48, OUT_CHANNELS=64, HEIGHT=129, WIDTH=91),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=11, WIDTH=9),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=11, HEIGHT=8, WIDTH=13),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        x = F.avg_pool2d(self.conv(x), 2)
        return torch.logsumexp(x, dim=1, keepdim=True)


def get_inputs():
    return [4.0 * torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
