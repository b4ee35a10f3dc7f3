"""Softmax over the channel dimension (dim 1) of a 4D tensor of per-pixel class scores."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["softmax", "reduction", "exp"]

BATCH = 64
CHANNELS = 64
HEIGHT = 128
WIDTH = 128

VARIANTS = [
    dict(BATCH=32, CHANNELS=21, HEIGHT=321, WIDTH=319),
    dict(BATCH=128, CHANNELS=200, HEIGHT=47, WIDTH=53),
]
SMALL = dict(BATCH=2, CHANNELS=16, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=21, HEIGHT=9, WIDTH=11),
    dict(BATCH=1, CHANNELS=5, HEIGHT=17, WIDTH=15),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 2.5]


def get_init_inputs():
    return []
