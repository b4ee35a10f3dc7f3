"""SiLU (swish, x * sigmoid(x)) applied elementwise to a batch of feature maps."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["silu", "elementwise", "activation", "sigmoid"]

BATCH = 32
CHANNELS = 256
HEIGHT = 96
WIDTH = 96

VARIANTS = [
    dict(BATCH=9, CHANNELS=320, HEIGHT=129, WIDTH=135),
    dict(BATCH=48, CHANNELS=144, HEIGHT=77, WIDTH=91),
]
SMALL = dict(BATCH=2, CHANNELS=16, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=1, CHANNELS=7, HEIGHT=9, WIDTH=13),
    dict(BATCH=3, CHANNELS=5, HEIGHT=15, WIDTH=11),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.silu(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 3.0]


def get_init_inputs():
    return []
