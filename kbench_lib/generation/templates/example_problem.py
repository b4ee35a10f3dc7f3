"""Worked example for the prompts: x * sigmoid(x) + y (SiLU, then a residual add)."""
import torch
import torch.nn as nn

N = 4096
D = 8192
VARIANTS = [dict(N=333, D=1001)]
SMALL = dict(N=32, D=96)
SMALL_VARIANTS = [dict(N=5, D=33)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return x * torch.sigmoid(x) + y


def get_inputs():
    return [torch.randn(N, D), torch.randn(N, D)]


def get_init_inputs():
    return []
