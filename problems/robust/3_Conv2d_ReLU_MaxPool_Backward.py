"""2D convolution (same padding, bias) then ReLU then non-overlapping max pooling; output and all gradients are judged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["conv2d", "bias", "relu", "maxpool2d"]

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 64
WIDTH = 64
KERNEL_SIZE = 3
POOL_SIZE = 2

VARIANTS = [
    dict(BATCH=24, IN_CHANNELS=96, OUT_CHANNELS=160, HEIGHT=57, WIDTH=75, KERNEL_SIZE=3, POOL_SIZE=2),
    dict(BATCH=16, IN_CHANNELS=3, OUT_CHANNELS=64, HEIGHT=223, WIDTH=223, KERNEL_SIZE=7, POOL_SIZE=3),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=12, HEIGHT=16, WIDTH=16, KERNEL_SIZE=3, POOL_SIZE=2)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=13, WIDTH=17, KERNEL_SIZE=3, POOL_SIZE=2),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=9, HEIGHT=21, WIDTH=19, KERNEL_SIZE=5, POOL_SIZE=3),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, pool_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.pool_size = pool_size

    def forward(self, x):
        return F.max_pool2d(F.relu(self.conv(x)), self.pool_size)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, POOL_SIZE]
