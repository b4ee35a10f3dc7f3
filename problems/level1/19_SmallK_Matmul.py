"""Matrix multiplication with a tiny reduction dimension, (M, K) @ (K, N) with K of only a few dozen."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "gemm", "small_k"]

M = 16384
N = 16384
K = 32

VARIANTS = [
    dict(M=12001, N=10007, K=17),
    dict(M=20000, N=6145, K=63),
]
SMALL = dict(M=128, N=96, K=16)
SMALL_VARIANTS = [
    dict(M=77, N=129, K=19),
    dict(M=201, N=33, K=61),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
