"""DCGAN generator block: 4x4 stride-2 transposed convolution that doubles the resolution, batch normalization with batch statistics and ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose2d", "batchnorm", "relu"]

BATCH = 64
IN_CHANNELS = 256
OUT_CHANNELS = 128
HEIGHT = 32
WIDTH = 32
EPS = 1e-5

VARIANTS = [
    dict(BATCH=32, IN_CHANNELS=192, OUT_CHANNELS=96, HEIGHT=45, WIDTH=45),
    dict(BATCH=100, IN_CHANNELS=512, OUT_CHANNELS=256, HEIGHT=15, WIDTH=17),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=4, HEIGHT=6, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=7, OUT_CHANNELS=5, HEIGHT=5, WIDTH=7),
    dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=3, HEIGHT=9, WIDTH=4),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, eps):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, 4, stride=2, padding=1, bias=False)
        self.bn_weight = nn.Parameter(1.0 + 0.2 * torch.randn(out_channels))
        self.bn_bias = nn.Parameter(0.2 * torch.randn(out_channels))
        self.eps = eps

    def forward(self, x):
        x = self.deconv(x)
        # training-mode batch norm: statistics over (N, H, W) of this batch, no running stats kept
        x = F.batch_norm(x, None, None, self.bn_weight, self.bn_bias, training=True, eps=self.eps)
        return F.relu(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, EPS]
