"""Tall-skinny matrix multiplication: a very tall (M, K) matrix with few columns times a small (K, N) matrix."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "gemm", "tall_skinny"]

M = 131072
K = 384
N = 256

VARIANTS = [
    dict(M=100003, K=257, N=191),
    dict(M=262147, K=200, N=136),
]
SMALL = dict(M=1024, K=24, N=16)
SMALL_VARIANTS = [
    dict(M=777, K=17, N=9),
    dict(M=1531, K=31, N=21),
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
