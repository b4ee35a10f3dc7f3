"""2D average pooling (Inception-branch style 3x3, stride 1, zero padding counted) over a batch of feature maps."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["avg_pool2d", "pooling"]

BATCH = 64
CHANNELS = 192
HEIGHT = 71
WIDTH = 71
KERNEL_SIZE = 3
STRIDE = 1
PADDING = 1
COUNT_INCLUDE_PAD = True

VARIANTS = [
    dict(BATCH=16, CHANNELS=288, HEIGHT=147, WIDTH=149, KERNEL_SIZE=2, STRIDE=2, PADDING=0, COUNT_INCLUDE_PAD=True),
    dict(BATCH=256, CHANNELS=97, HEIGHT=63, WIDTH=65, KERNEL_SIZE=5, STRIDE=3, PADDING=2, COUNT_INCLUDE_PAD=False),
]
SMALL = dict(BATCH=2, CHANNELS=6, HEIGHT=15, WIDTH=15)
SMALL_VARIANTS = [
    dict(BATCH=1, CHANNELS=5, HEIGHT=17, WIDTH=19, KERNEL_SIZE=2, STRIDE=2, PADDING=0),
    dict(BATCH=3, CHANNELS=3, HEIGHT=13, WIDTH=11, KERNEL_SIZE=5, STRIDE=3, PADDING=2, COUNT_INCLUDE_PAD=False),
]


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding, count_include_pad):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size, stride=stride, padding=padding, count_include_pad=count_include_pad)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 2.0 + 0.5]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE, PADDING, COUNT_INCLUDE_PAD]
