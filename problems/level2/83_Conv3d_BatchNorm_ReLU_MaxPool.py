"""Same-padded 3x3x3 convolution over a volume, batch normalization with batch statistics, ReLU and 2x2x2 max pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv3d", "batchnorm", "relu", "maxpool"]

BATCH = 8
IN_CHANNELS = 32
OUT_CHANNELS = 64
DEPTH = 32
HEIGHT = 64
WIDTH = 64
EPS = 1e-5

VARIANTS = [
    dict(BATCH=4, IN_CHANNELS=48, OUT_CHANNELS=96, DEPTH=27, HEIGHT=53, WIDTH=53),
    dict(BATCH=2, IN_CHANNELS=16, OUT_CHANNELS=40, DEPTH=65, HEIGHT=97, WIDTH=81),
]
SMALL = dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=6, DEPTH=6, HEIGHT=6, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=4, OUT_CHANNELS=5, DEPTH=5, HEIGHT=7, WIDTH=6),
    dict(BATCH=2, IN_CHANNELS=5, OUT_CHANNELS=7, DEPTH=4, HEIGHT=5, WIDTH=9),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, eps):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn_weight = nn.Parameter(1.0 + 0.2 * torch.randn(out_channels))
        self.bn_bias = nn.Parameter(0.2 * torch.randn(out_channels))
        self.eps = eps

    def forward(self, x):
        x = self.conv(x)
        # training-mode batch norm: statistics over (N, D, H, W) of this batch, no running stats kept
        x = F.batch_norm(x, None, None, self.bn_weight, self.bn_bias, training=True, eps=self.eps)
        x = F.relu(x)
        return F.max_pool3d(x, 2)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, EPS]
