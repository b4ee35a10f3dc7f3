"""Gemma-2 style post-attention sandwich norm: output projection, RMSNorm with (1 + weight) scaling, and addition to the residual stream."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "rmsnorm", "residual", "add"]

BATCH = 2
SEQ_LEN = 2048
IN_FEATURES = 4096
DIM = 3584
EPS = 1e-6

VARIANTS = [
    dict(BATCH=1, SEQ_LEN=1999, IN_FEATURES=2048, DIM=2304),
    dict(BATCH=8, SEQ_LEN=300, IN_FEATURES=3072, DIM=3073),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, IN_FEATURES=64, DIM=48)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=19, IN_FEATURES=33, DIM=40),
    dict(BATCH=3, SEQ_LEN=6, IN_FEATURES=32, DIM=57),
]


class Model(nn.Module):
    def __init__(self, in_features, dim, eps):
        super().__init__()
        self.o_proj = nn.Linear(in_features, dim, bias=False)
        self.post_norm_weight = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, attn_out, residual):
        h = self.o_proj(attn_out)
        h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return residual + h * (1.0 + self.post_norm_weight)


def get_inputs():
    attn_out = torch.randn(BATCH, SEQ_LEN, IN_FEATURES)
    residual = torch.randn(BATCH, SEQ_LEN, DIM) * 3.0
    return [attn_out, residual]


def get_init_inputs():
    return [IN_FEATURES, DIM, EPS]
