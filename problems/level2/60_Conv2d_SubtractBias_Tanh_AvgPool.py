"""Same-padded 5x5 convolution, subtraction of a learned per-channel bias, tanh and 2x2 average pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "subtract", "bias", "tanh", "avgpool"]

BATCH = 32
IN_CHANNELS = 32
OUT_CHANNELS = 96
HEIGHT = 96
WIDTH = 96
KERNEL_SIZE = 5

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=48, OUT_CHANNELS=64, HEIGHT=123, WIDTH=99),
    dict(BATCH=64, IN_CHANNELS=24, OUT_CHANNELS=120, HEIGHT=61, WIDTH=61, KERNEL_SIZE=3),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=11, WIDTH=9),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=6, HEIGHT=12, WIDTH=7, KERNEL_SIZE=3),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.sub_bias = nn.Parameter(0.5 * torch.randn(out_channels, 1, 1))

    def forward(self, x):
        x = self.conv(x) - self.sub_bias
        x = torch.tanh(x)
        return F.avg_pool2d(x, 2)


def get_inputs():
    return [2.0 * torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]
