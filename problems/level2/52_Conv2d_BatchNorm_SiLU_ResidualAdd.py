"""Same-padded 3x3 convolution, batch normalization with batch statistics, SiLU and a residual add of the block input."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "batchnorm", "silu", "residual"]

BATCH = 32
CHANNELS = 128
HEIGHT = 56
WIDTH = 56
EPS = 1e-5

VARIANTS = [
    dict(BATCH=24, CHANNELS=96, HEIGHT=71, WIDTH=71),
    dict(BATCH=8, CHANNELS=256, HEIGHT=33, WIDTH=45),
]
SMALL = dict(BATCH=2, CHANNELS=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=5, HEIGHT=11, WIDTH=9),
    dict(BATCH=4, CHANNELS=6, HEIGHT=7, WIDTH=12),
]


class Model(nn.Module):
    def __init__(self, channels, eps):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn_weight = nn.Parameter(1.0 + 0.1 * torch.randn(channels))
        self.bn_bias = nn.Parameter(0.1 * torch.randn(channels))
        self.eps = eps

    def forward(self, x):
        y = self.conv(x)
        # training-mode batch norm: statistics over (N, H, W) of this batch, no running stats kept
        y = F.batch_norm(y, None, None, self.bn_weight, self.bn_bias, training=True, eps=self.eps)
        y = F.silu(y)
        return y + x


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, EPS]
