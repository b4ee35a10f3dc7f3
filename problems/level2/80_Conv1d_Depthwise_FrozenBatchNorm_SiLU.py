"""Conformer-style depthwise 1D convolution with a long kernel, inference-mode batch normalization and SiLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv1d", "depthwise", "batchnorm", "silu"]

BATCH = 64
CHANNELS = 512
LENGTH = 2048
KERNEL_SIZE = 31
EPS = 1e-5

VARIANTS = [
    dict(BATCH=32, CHANNELS=384, LENGTH=3001, KERNEL_SIZE=15),
    dict(BATCH=96, CHANNELS=256, LENGTH=1999),
]
SMALL = dict(BATCH=2, CHANNELS=8, LENGTH=64, KERNEL_SIZE=7)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=5, LENGTH=45, KERNEL_SIZE=15),
    dict(BATCH=2, CHANNELS=12, LENGTH=97, KERNEL_SIZE=9),
]


class Model(nn.Module):
    def __init__(self, channels, kernel_size, eps):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels, bias=False)
        self.bn_weight = nn.Parameter(1.0 + 0.2 * torch.randn(channels))
        self.bn_bias = nn.Parameter(0.2 * torch.randn(channels))
        self.register_buffer("running_mean", 0.1 * torch.randn(channels))
        self.register_buffer("running_var", 0.2 + 0.3 * torch.rand(channels))
        self.eps = eps

    def forward(self, x):
        x = self.conv(x)
        x = F.batch_norm(x, self.running_mean, self.running_var, self.bn_weight, self.bn_bias,
                         training=False, eps=self.eps)
        return F.silu(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL_SIZE, EPS]
