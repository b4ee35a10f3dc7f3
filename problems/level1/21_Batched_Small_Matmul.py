"""Batched multiplication of a very large number of tiny matrices, (BATCH, M, K) @ (BATCH, K, N)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "bmm", "batched", "small_matrices"]

BATCH = 65536
M = 32
K = 32
N = 32

VARIANTS = [
    dict(BATCH=100003, M=24, K=40, N=17),
    dict(BATCH=30011, M=64, K=48, N=64),
]
SMALL = dict(BATCH=256, M=8, K=8, N=8)
SMALL_VARIANTS = [
    dict(BATCH=129, M=5, K=7, N=3),
    dict(BATCH=301, M=9, K=4, N=11),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs():
    return []
