"""Maximum value over the last dimension of a large matrix (values only)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["max", "reduction"]

ROWS = 16384
COLS = 8192

VARIANTS = [
    dict(ROWS=75001, COLS=1500),
    dict(ROWS=1500, COLS=65537),
]
SMALL = dict(ROWS=64, COLS=256)
SMALL_VARIANTS = [
    dict(ROWS=17, COLS=99),
    dict(ROWS=5, COLS=1031),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.max(x, dim=-1).values


def get_inputs():
    x = torch.randn(ROWS, COLS) * 3.0
    return [x + torch.randn(ROWS, 1) * 2.0]


def get_init_inputs():
    return []
