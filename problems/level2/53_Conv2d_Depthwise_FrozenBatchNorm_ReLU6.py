"""Depthwise 3x3 convolution followed by inference-mode batch normalization (running statistics) and ReLU6."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "depthwise", "batchnorm", "relu6", "clamp"]

BATCH = 64
CHANNELS = 144
HEIGHT = 112
WIDTH = 112
STRIDE = 1
EPS = 1e-5

VARIANTS = [
    dict(BATCH=48, CHANNELS=96, HEIGHT=149, WIDTH=149, STRIDE=2),
    dict(BATCH=64, CHANNELS=384, HEIGHT=57, WIDTH=57),
]
SMALL = dict(BATCH=2, CHANNELS=8, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=7, HEIGHT=13, WIDTH=11, STRIDE=2),
    dict(BATCH=2, CHANNELS=12, HEIGHT=9, WIDTH=10),
]


class Model(nn.Module):
    def __init__(self, channels, stride, eps):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, stride=stride, padding=1, groups=channels, bias=False)
        self.bn_weight = nn.Parameter(1.0 + 0.2 * torch.randn(channels))
        self.bn_bias = nn.Parameter(0.5 * torch.randn(channels))
        self.register_buffer("running_mean", 0.2 * torch.randn(channels))
        self.register_buffer("running_var", 0.5 + torch.rand(channels))
        self.eps = eps

    def forward(self, x):
        x = self.conv(x)
        x = F.batch_norm(x, self.running_mean, self.running_var, self.bn_weight, self.bn_bias,
                         training=False, eps=self.eps)
        return F.hardtanh(x, 0.0, 6.0)


def get_inputs():
    return [4.0 * torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, STRIDE, EPS]
