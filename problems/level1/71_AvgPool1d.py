"""1D average pooling with padding that is excluded from the averages, over a batch of multichannel signals."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["avg_pool1d", "pooling"]

BATCH = 128
CHANNELS = 128
LENGTH = 8192
KERNEL_SIZE = 8
STRIDE = 4
PADDING = 3
COUNT_INCLUDE_PAD = False

VARIANTS = [
    dict(BATCH=33, CHANNELS=257, LENGTH=10001, KERNEL_SIZE=5, STRIDE=3, PADDING=2, COUNT_INCLUDE_PAD=True),
    dict(BATCH=384, CHANNELS=64, LENGTH=4099, KERNEL_SIZE=4, STRIDE=4, PADDING=0, COUNT_INCLUDE_PAD=False),
]
SMALL = dict(BATCH=2, CHANNELS=8, LENGTH=64)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=5, LENGTH=41, KERNEL_SIZE=5, STRIDE=3, PADDING=2, COUNT_INCLUDE_PAD=True),
    dict(BATCH=1, CHANNELS=7, LENGTH=99, KERNEL_SIZE=4, STRIDE=4, PADDING=0),
]


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding, count_include_pad):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size, stride=stride, padding=padding, count_include_pad=count_include_pad)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH) * 2.0 + 0.5]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE, PADDING, COUNT_INCLUDE_PAD]
