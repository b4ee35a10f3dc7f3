"""Batched matrix product of two input tensors, C[b] = A[b] @ B[b]; the output and the gradients of A and B are judged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["bmm", "matmul"]

BATCH = 32
M = 512
K = 1024
N = 768

VARIANTS = [
    dict(BATCH=12, M=1023, K=257, N=1531),
    dict(BATCH=256, M=333, K=96, N=333),
]
SMALL = dict(BATCH=4, M=24, K=32, N=40)
SMALL_VARIANTS = [
    dict(BATCH=3, M=7, K=33, N=17),
    dict(BATCH=5, M=31, K=9, N=21),
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
