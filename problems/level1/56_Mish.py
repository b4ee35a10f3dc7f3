"""Mish (x * tanh(softplus(x))) applied elementwise to a batch of detector feature maps."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["mish", "elementwise", "activation", "softplus", "tanh"]

BATCH = 64
CHANNELS = 192
HEIGHT = 80
WIDTH = 80

VARIANTS = [
    dict(BATCH=16, CHANNELS=255, HEIGHT=121, WIDTH=119),
    dict(BATCH=5, CHANNELS=1024, HEIGHT=101, WIDTH=99),
]
SMALL = dict(BATCH=2, CHANNELS=12, HEIGHT=10, WIDTH=14)
SMALL_VARIANTS = [
    dict(BATCH=1, CHANNELS=9, HEIGHT=11, WIDTH=7),
    dict(BATCH=3, CHANNELS=5, HEIGHT=13, WIDTH=19),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.mish(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 4.0]


def get_init_inputs():
    return []
