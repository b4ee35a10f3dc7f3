"""3D average pooling (3x3x3, stride 2, padding excluded from the averages) over a batch of feature volumes."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["avg_pool3d", "pooling"]

BATCH = 4
CHANNELS = 64
DEPTH = 48
HEIGHT = 112
WIDTH = 112
KERNEL_SIZE = 3
STRIDE = 2
PADDING = 1
COUNT_INCLUDE_PAD = False

VARIANTS = [
    dict(BATCH=2, CHANNELS=48, DEPTH=61, HEIGHT=127, WIDTH=129, KERNEL_SIZE=2, STRIDE=2, PADDING=0, COUNT_INCLUDE_PAD=True),
    dict(BATCH=8, CHANNELS=17, DEPTH=40, HEIGHT=99, WIDTH=101, KERNEL_SIZE=3, STRIDE=1, PADDING=1, COUNT_INCLUDE_PAD=True),
]
SMALL = dict(BATCH=2, CHANNELS=3, DEPTH=8, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=1, CHANNELS=4, DEPTH=7, HEIGHT=9, WIDTH=11, KERNEL_SIZE=2, STRIDE=2, PADDING=0, COUNT_INCLUDE_PAD=True),
    dict(BATCH=3, CHANNELS=2, DEPTH=5, HEIGHT=13, WIDTH=7, KERNEL_SIZE=3, STRIDE=1, PADDING=1, COUNT_INCLUDE_PAD=True),
]


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding, count_include_pad):
        super().__init__()
        self.pool = nn.AvgPool3d(kernel_size, stride=stride, padding=padding, count_include_pad=count_include_pad)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH) * 2.0 + 0.5]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE, PADDING, COUNT_INCLUDE_PAD]
