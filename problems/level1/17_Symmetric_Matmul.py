"""Dense matrix product A @ B of two symmetric N x N matrices."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "gemm", "symmetric"]

N = 4096

VARIANTS = [
    dict(N=3073),
    dict(N=4999),
]
SMALL = dict(N=56)
SMALL_VARIANTS = [
    dict(N=41),
    dict(N=83),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    # the second operand scaled by 1/sqrt(reduction length) keeps the product near unit scale: with
    # raw randn the fp32 summation-order error of a long reduction exceeds the fp32 tolerance
    x = torch.randn(N, N)
    y = torch.randn(N, N)
    return [(x + x.T) * 0.5, (y + y.T) * (0.5 / N ** 0.5)]


def get_init_inputs():
    return []
