"""ReLU applied elementwise to a batch of convolutional feature maps."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["relu", "elementwise", "activation"]

BATCH = 64
CHANNELS = 128
HEIGHT = 112
WIDTH = 112

VARIANTS = [
    dict(BATCH=33, CHANNELS=96, HEIGHT=127, WIDTH=129),
    dict(BATCH=8, CHANNELS=515, HEIGHT=111, WIDTH=113),
]
SMALL = dict(BATCH=2, CHANNELS=8, HEIGHT=13, WIDTH=15)
SMALL_VARIANTS = [
    dict(BATCH=1, CHANNELS=5, HEIGHT=7, WIDTH=9),
    dict(BATCH=3, CHANNELS=3, HEIGHT=17, WIDTH=11),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.relu(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
