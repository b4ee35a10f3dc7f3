"""Exact (erf-based) GELU applied elementwise to the up-projection of a feed-forward block."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gelu", "elementwise", "activation", "erf"]

TOKENS = 8192
FFN_DIM = 11008

VARIANTS = [
    dict(TOKENS=4095, FFN_DIM=14336),
    dict(TOKENS=20001, FFN_DIM=3071),
]
SMALL = dict(TOKENS=40, FFN_DIM=172)
SMALL_VARIANTS = [
    dict(TOKENS=13, FFN_DIM=77),
    dict(TOKENS=5, FFN_DIM=301),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x)


def get_inputs():
    return [torch.randn(TOKENS, FFN_DIM) * 2.5]


def get_init_inputs():
    return []
