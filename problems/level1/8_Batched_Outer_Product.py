"""Batched vector outer product: for each batch item, the (M, 1) @ (1, N) rank-one matrix x_b y_b^T."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "outer_product", "bmm", "batched"]

BATCH = 32
M = 4096
N = 2048

VARIANTS = [
    dict(BATCH=17, M=5003, N=3001),
    dict(BATCH=97, M=1023, N=2049),
]
SMALL = dict(BATCH=8, M=64, N=48)
SMALL_VARIANTS = [
    dict(BATCH=9, M=37, N=29),
    dict(BATCH=13, M=61, N=7),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.bmm(x.unsqueeze(2), y.unsqueeze(1))


def get_inputs():
    return [torch.randn(BATCH, M), torch.randn(BATCH, N)]


def get_init_inputs():
    return []
