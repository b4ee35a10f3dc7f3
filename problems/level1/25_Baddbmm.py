"""Batched matrix multiplication accumulated into a scaled input, beta * C + alpha * (A @ B) via torch.baddbmm."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "baddbmm", "bmm", "batched", "scale"]

BATCH = 64
M = 512
K = 1024
N = 768
ALPHA = 0.125
BETA = 4.0

VARIANTS = [
    dict(BATCH=33, M=777, K=513, N=1025, ALPHA=0.25, BETA=-2.0),
    dict(BATCH=128, M=255, K=2049, N=384),
]
SMALL = dict(BATCH=4, M=16, K=32, N=24)
SMALL_VARIANTS = [
    dict(BATCH=3, M=11, K=21, N=7, ALPHA=0.25, BETA=-2.0),
    dict(BATCH=5, M=9, K=35, N=13),
]


class Model(nn.Module):
    def __init__(self, alpha, beta):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, c, a, b):
        return torch.baddbmm(c, a, b, beta=self.beta, alpha=self.alpha)


def get_inputs():
    return [torch.randn(BATCH, M, N), torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs():
    return [ALPHA, BETA]
