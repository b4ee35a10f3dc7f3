"""Product of a diagonal matrix built from a vector with a dense matrix, diag(a) @ B."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "diag", "gemm"]

N = 4096
M = 4096

VARIANTS = [
    dict(N=3001, M=5003),
    dict(N=6000, M=1537),
]
SMALL = dict(N=48, M=64)
SMALL_VARIANTS = [
    dict(N=37, M=33),
    dict(N=61, M=19),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.diag(a) @ b


def get_inputs():
    return [torch.randn(N), torch.randn(N, M)]


def get_init_inputs():
    return []


def min_flops():
    """The task needs one multiply per output element: diag(a) @ B scales the rows of B."""
    return N * M
