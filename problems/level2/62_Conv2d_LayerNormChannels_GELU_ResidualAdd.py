"""Same-padded 3x3 convolution, layer normalization over the channel dimension at every pixel, GELU and a residual add of the block input."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "layernorm", "gelu", "residual"]

BATCH = 16
CHANNELS = 192
HEIGHT = 56
WIDTH = 56
EPS = 1e-6

VARIANTS = [
    dict(BATCH=8, CHANNELS=384, HEIGHT=29, WIDTH=29),
    dict(BATCH=32, CHANNELS=96, HEIGHT=75, WIDTH=61),
]
SMALL = dict(BATCH=2, CHANNELS=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=7, HEIGHT=9, WIDTH=11),
    dict(BATCH=2, CHANNELS=12, HEIGHT=13, WIDTH=6),
]


class Model(nn.Module):
    def __init__(self, channels, eps):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = nn.LayerNorm(channels, eps=eps)
        with torch.no_grad():
            self.norm.weight.add_(0.1 * torch.randn(channels))
            self.norm.bias.add_(0.1 * torch.randn(channels))

    def forward(self, x):
        y = self.conv(x)
        y = self.norm(y.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        y = F.gelu(y)
        return x + y


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, EPS]
