"""Matrix multiplication with a broadcast row bias added, torch.addmm(bias, A, B) = bias + A @ B."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "addmm", "gemm", "bias"]

M = 4096
K = 3072
N = 4096

VARIANTS = [
    dict(M=2047, K=5001, N=3003),
    dict(M=6000, K=1025, N=2561),
]
SMALL = dict(M=48, K=40, N=32)
SMALL_VARIANTS = [
    dict(M=25, K=61, N=13),
    dict(M=7, K=19, N=77),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, bias, a, b):
        return torch.addmm(bias, a, b)


def get_inputs():
    # bias on the same scale as the product (std ~ sqrt(K)) so that it matters
    scale = float(K) ** 0.5
    return [torch.randn(N) * scale, torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
