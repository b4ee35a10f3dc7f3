"""3D generator block: 4x4x4 stride-2 transposed convolution that doubles every spatial size, batch normalization with batch statistics and ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose3d", "batchnorm", "relu"]

BATCH = 8
IN_CHANNELS = 64
OUT_CHANNELS = 32
DEPTH = 16
HEIGHT = 24
WIDTH = 24
EPS = 1e-5

VARIANTS = [
    dict(BATCH=4, IN_CHANNELS=128, OUT_CHANNELS=64, DEPTH=13, HEIGHT=17, WIDTH=17),
    dict(BATCH=16, IN_CHANNELS=48, OUT_CHANNELS=24, DEPTH=9, HEIGHT=21, WIDTH=27),
]
SMALL = dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=4, DEPTH=3, HEIGHT=4, WIDTH=4)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=3, DEPTH=3, HEIGHT=5, WIDTH=3),
    dict(BATCH=2, IN_CHANNELS=7, OUT_CHANNELS=5, DEPTH=2, HEIGHT=3, WIDTH=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, eps):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_channels, out_channels, 4, stride=2, padding=1, bias=False)
        self.bn_weight = nn.Parameter(1.0 + 0.2 * torch.randn(out_channels))
        self.bn_bias = nn.Parameter(0.2 * torch.randn(out_channels))
        self.eps = eps

    def forward(self, x):
        x = self.deconv(x)
        # training-mode batch norm: statistics over (N, D, H, W) of this batch, no running stats kept
        x = F.batch_norm(x, None, None, self.bn_weight, self.bn_bias, training=True, eps=self.eps)
        return F.relu(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, EPS]
