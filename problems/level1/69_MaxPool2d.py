"""2D max pooling (ResNet-stem style 3x3, stride 2, padding 1) over a batch of feature maps."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["max_pool2d", "pooling"]

BATCH = 64
CHANNELS = 64
HEIGHT = 224
WIDTH = 224
KERNEL_SIZE = 3
STRIDE = 2
PADDING = 1

VARIANTS = [
    dict(BATCH=16, CHANNELS=96, HEIGHT=299, WIDTH=301, KERNEL_SIZE=3, STRIDE=2, PADDING=0),
    dict(BATCH=96, CHANNELS=256, HEIGHT=57, WIDTH=57, KERNEL_SIZE=2, STRIDE=2, PADDING=0),
]
SMALL = dict(BATCH=2, CHANNELS=4, HEIGHT=24, WIDTH=24)
SMALL_VARIANTS = [
    dict(BATCH=1, CHANNELS=5, HEIGHT=17, WIDTH=19, KERNEL_SIZE=3, STRIDE=2, PADDING=0),
    dict(BATCH=3, CHANNELS=3, HEIGHT=15, WIDTH=13, KERNEL_SIZE=2, STRIDE=2, PADDING=0),
]


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE, PADDING]
