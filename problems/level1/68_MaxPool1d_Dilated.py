"""1D max pooling with kernel size, stride, padding and dilation over a batch of multichannel signals."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["max_pool1d", "pooling"]

BATCH = 64
CHANNELS = 256
LENGTH = 8192
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 2
DILATION = 3

VARIANTS = [
    dict(BATCH=17, CHANNELS=301, LENGTH=12001, KERNEL_SIZE=3, STRIDE=3, PADDING=1, DILATION=2),
    dict(BATCH=128, CHANNELS=96, LENGTH=5000, KERNEL_SIZE=5, STRIDE=2, PADDING=2, DILATION=1),
]
SMALL = dict(BATCH=2, CHANNELS=8, LENGTH=64)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=5, LENGTH=41, KERNEL_SIZE=3, STRIDE=3, PADDING=1, DILATION=2),
    dict(BATCH=1, CHANNELS=7, LENGTH=99, KERNEL_SIZE=5, STRIDE=2, PADDING=2, DILATION=1),
]


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding, dilation):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE, PADDING, DILATION]
