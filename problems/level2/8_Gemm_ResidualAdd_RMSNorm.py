"""Llama-style attention output projection followed by the fused residual add and RMSNorm that produce the next sub-layer's normalized input."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "residual", "add", "rmsnorm"]

BATCH = 4
SEQ_LEN = 2048
DIM = 4096
EPS = 1e-5

VARIANTS = [
    dict(BATCH=1, SEQ_LEN=3001, DIM=5120),
    dict(BATCH=16, SEQ_LEN=257, DIM=2560),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, DIM=64)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=21, DIM=33),
    dict(BATCH=3, SEQ_LEN=5, DIM=80),
]


class Model(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.o_proj = nn.Linear(dim, dim, bias=False)
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, attn_out, residual):
        h = residual + self.o_proj(attn_out)
        h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return h * self.weight


def get_inputs():
    attn_out = torch.randn(BATCH, SEQ_LEN, DIM)
    residual = torch.randn(BATCH, SEQ_LEN, DIM) * 2.0
    return [attn_out, residual]


def get_init_inputs():
    return [DIM, EPS]
