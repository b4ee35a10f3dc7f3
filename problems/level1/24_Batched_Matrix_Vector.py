"""Batched matrix-vector product: each (M, K) matrix of a batch times its own length-K vector."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "gemv", "bmm", "batched", "matrix_vector"]

BATCH = 64
M = 2048
K = 2048

VARIANTS = [
    dict(BATCH=31, M=3001, K=2049),
    dict(BATCH=200, M=1023, K=1025),
]
SMALL = dict(BATCH=4, M=48, K=64)
SMALL_VARIANTS = [
    dict(BATCH=3, M=27, K=41),
    dict(BATCH=7, M=65, K=15),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, x):
        return torch.bmm(a, x.unsqueeze(2)).squeeze(2)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K)]


def get_init_inputs():
    return []
