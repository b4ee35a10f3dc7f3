"""Cumulative product along the last dimension of rows of factors close to one, like compounded growth rates."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cumprod", "scan"]

ROWS = 16384
LENGTH = 4096

VARIANTS = [
    dict(ROWS=4099, LENGTH=16385),
    dict(ROWS=65536, LENGTH=1001),
]
SMALL = dict(ROWS=32, LENGTH=512)
SMALL_VARIANTS = [
    dict(ROWS=7, LENGTH=1001),
    dict(ROWS=65, LENGTH=63),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumprod(x, dim=-1)


def get_inputs():
    # factors 1 + eps with std 1/sqrt(LENGTH): the log of a full-row product has std ~1, so it stays finite
    return [1.0 + torch.randn(ROWS, LENGTH) / LENGTH ** 0.5]


def get_init_inputs():
    return []
