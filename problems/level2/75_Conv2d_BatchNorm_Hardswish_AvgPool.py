"""Same-padded 3x3 convolution, batch normalization with batch statistics, hardswish and 2x2 average pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "batchnorm", "hardswish", "avgpool"]

BATCH = 32
IN_CHANNELS = 96
OUT_CHANNELS = 160
HEIGHT = 64
WIDTH = 64
EPS = 1e-3

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=64, OUT_CHANNELS=120, HEIGHT=99, WIDTH=99),
    dict(BATCH=64, IN_CHANNELS=40, OUT_CHANNELS=80, HEIGHT=57, WIDTH=77),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=11, WIDTH=9),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=6, HEIGHT=13, WIDTH=8),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, eps):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        # wide affine so the normalized values reach every hardswish region
        self.bn_weight = nn.Parameter(1.0 + 1.0 * torch.rand(out_channels))
        self.bn_bias = nn.Parameter(0.5 * torch.randn(out_channels))
        self.eps = eps

    def forward(self, x):
        x = self.conv(x)
        # training-mode batch norm: statistics over (N, H, W) of this batch, no running stats kept
        x = F.batch_norm(x, None, None, self.bn_weight, self.bn_bias, training=True, eps=self.eps)
        x = F.hardswish(x)
        return F.avg_pool2d(x, 2)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, EPS]
