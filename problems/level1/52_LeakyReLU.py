"""LeakyReLU with a configurable negative slope applied elementwise to a matrix of token activations."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["leaky_relu", "elementwise", "activation"]

TOKENS = 16384
HIDDEN = 6144
NEGATIVE_SLOPE = 0.2

VARIANTS = [
    dict(TOKENS=9999, HIDDEN=5003, NEGATIVE_SLOPE=0.01),
    dict(TOKENS=65537, HIDDEN=1000, NEGATIVE_SLOPE=0.2),
]
SMALL = dict(TOKENS=48, HIDDEN=200)
SMALL_VARIANTS = [
    dict(TOKENS=7, HIDDEN=131, NEGATIVE_SLOPE=0.01),
    dict(TOKENS=33, HIDDEN=65),
]


class Model(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return F.leaky_relu(x, negative_slope=self.negative_slope)


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN) * 2.0]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
