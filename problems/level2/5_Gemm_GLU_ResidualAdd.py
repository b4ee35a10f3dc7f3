"""Gated linear unit sub-layer with a skip connection: a linear to twice the width, GLU (a * sigmoid(b)), and addition of the layer input."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "glu", "sigmoid", "mul", "residual", "add"]

TOKENS = 4096
DIM = 2048

VARIANTS = [
    dict(TOKENS=2999, DIM=1536),
    dict(TOKENS=8192, DIM=1000),
]
SMALL = dict(TOKENS=40, DIM=64)
SMALL_VARIANTS = [
    dict(TOKENS=13, DIM=33),
    dict(TOKENS=51, DIM=18),
]


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 2 * dim)

    def forward(self, x):
        return x + F.glu(self.proj(x), dim=-1)


def get_inputs():
    return [torch.randn(TOKENS, DIM)]


def get_init_inputs():
    return [DIM]
