"""Matrix-vector product y = A @ x of a large (M, K) matrix with a (K, 1) column vector."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "gemv", "matrix_vector"]

M = 16384
K = 16384

VARIANTS = [
    dict(M=20001, K=9999),
    dict(M=4097, K=50001),
]
SMALL = dict(M=128, K=256)
SMALL_VARIANTS = [
    dict(M=77, K=301),
    dict(M=301, K=55),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, x):
        return torch.matmul(a, x)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, 1)]


def get_init_inputs():
    return []
