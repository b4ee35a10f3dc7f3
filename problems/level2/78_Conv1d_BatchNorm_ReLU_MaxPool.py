"""Same-padded 1D convolution over a multichannel signal, batch normalization with batch statistics, ReLU and max pooling by 2."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv1d", "batchnorm", "relu", "maxpool"]

BATCH = 64
IN_CHANNELS = 128
OUT_CHANNELS = 256
LENGTH = 2048
KERNEL_SIZE = 5
EPS = 1e-5

VARIANTS = [
    dict(BATCH=32, IN_CHANNELS=96, OUT_CHANNELS=192, LENGTH=4001, KERNEL_SIZE=7),
    dict(BATCH=128, IN_CHANNELS=64, OUT_CHANNELS=130, LENGTH=1501),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, LENGTH=64)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, LENGTH=45, KERNEL_SIZE=7),
    dict(BATCH=4, IN_CHANNELS=3, OUT_CHANNELS=6, LENGTH=33),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, eps):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=False)
        self.bn_weight = nn.Parameter(1.0 + 0.2 * torch.randn(out_channels))
        self.bn_bias = nn.Parameter(0.2 * torch.randn(out_channels))
        self.eps = eps

    def forward(self, x):
        x = self.conv(x)
        # training-mode batch norm: statistics over (N, L) of this batch, no running stats kept
        x = F.batch_norm(x, None, None, self.bn_weight, self.bn_bias, training=True, eps=self.eps)
        x = F.relu(x)
        return F.max_pool1d(x, 2)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, EPS]
