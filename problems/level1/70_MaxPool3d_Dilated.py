"""3D max pooling with kernel size, stride, padding and dilation over a batch of feature volumes."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["max_pool3d", "pooling"]

BATCH = 8
CHANNELS = 32
DEPTH = 48
HEIGHT = 112
WIDTH = 112
KERNEL_SIZE = 3
STRIDE = 2
PADDING = 1
DILATION = 2

VARIANTS = [
    dict(BATCH=4, CHANNELS=64, DEPTH=33, HEIGHT=97, WIDTH=101, KERNEL_SIZE=2, STRIDE=2, PADDING=0, DILATION=1),
    dict(BATCH=2, CHANNELS=16, DEPTH=129, HEIGHT=129, WIDTH=127, KERNEL_SIZE=3, STRIDE=1, PADDING=1, DILATION=1),
]
SMALL = dict(BATCH=2, CHANNELS=3, DEPTH=8, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=1, CHANNELS=4, DEPTH=7, HEIGHT=9, WIDTH=11, KERNEL_SIZE=2, STRIDE=2, PADDING=0, DILATION=1),
    dict(BATCH=3, CHANNELS=2, DEPTH=5, HEIGHT=13, WIDTH=7, KERNEL_SIZE=3, STRIDE=1, PADDING=1, DILATION=1),
]


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding, dilation):
        super().__init__()
        self.pool = nn.MaxPool3d(kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE, PADDING, DILATION]
