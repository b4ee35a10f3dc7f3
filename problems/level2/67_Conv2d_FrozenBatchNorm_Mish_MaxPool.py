"""ResNet-style stem: 7x7 stride-2 convolution, inference-mode batch normalization, Mish and 3x3 stride-2 max pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "batchnorm", "mish", "maxpool"]

BATCH = 128
IN_CHANNELS = 3
OUT_CHANNELS = 64
HEIGHT = 224
WIDTH = 224
EPS = 1e-5

VARIANTS = [
    dict(BATCH=96, HEIGHT=199, WIDTH=199),
    dict(BATCH=32, IN_CHANNELS=4, OUT_CHANNELS=96, HEIGHT=255, WIDTH=321),
]
SMALL = dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=8, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=3, OUT_CHANNELS=5, HEIGHT=13, WIDTH=11),
    dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=6, HEIGHT=15, WIDTH=15),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, eps):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 7, stride=2, padding=3, bias=False)
        self.bn_weight = nn.Parameter(1.0 + 0.2 * torch.randn(out_channels))
        self.bn_bias = nn.Parameter(0.2 * torch.randn(out_channels))
        self.register_buffer("running_mean", 0.1 * torch.randn(out_channels))
        self.register_buffer("running_var", 0.05 + 0.2 * torch.rand(out_channels))
        self.eps = eps

    def forward(self, x):
        x = self.conv(x)
        x = F.batch_norm(x, self.running_mean, self.running_var, self.bn_weight, self.bn_bias,
                         training=False, eps=self.eps)
        x = F.mish(x)
        return F.max_pool2d(x, 3, stride=2, padding=1)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, EPS]
