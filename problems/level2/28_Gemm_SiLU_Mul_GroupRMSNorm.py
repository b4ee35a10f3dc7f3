"""Mamba-2 style gated output norm: the gate branch of the input projection, SiLU of the gate times the scan output, and grouped RMSNorm with a learned weight."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "silu", "mul", "rmsnorm", "gating", "mamba"]

BATCH = 4
SEQ_LEN = 2048
D_MODEL = 2048
D_INNER = 4096
NGROUPS = 8
EPS = 1e-5

VARIANTS = [
    dict(BATCH=1, SEQ_LEN=4097, D_MODEL=1536, D_INNER=3072, NGROUPS=1),
    dict(BATCH=8, SEQ_LEN=777, D_MODEL=2560, D_INNER=5120, NGROUPS=4),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, D_MODEL=32, D_INNER=48, NGROUPS=2)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=13, D_MODEL=17, D_INNER=33, NGROUPS=3),
    dict(BATCH=3, SEQ_LEN=7, D_MODEL=40, D_INNER=64, NGROUPS=4),
]


class Model(nn.Module):
    def __init__(self, d_model, d_inner, ngroups, eps):
        super().__init__()
        self.z_proj = nn.Linear(d_model, d_inner, bias=False)
        self.weight = nn.Parameter(torch.ones(d_inner))
        self.ngroups = ngroups
        self.eps = eps

    def forward(self, u, y):
        h = y * F.silu(self.z_proj(u))
        shape = h.shape
        g = h.view(*shape[:-1], self.ngroups, shape[-1] // self.ngroups)
        g = g * torch.rsqrt(g.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return g.view(shape) * self.weight


def get_inputs():
    u = torch.randn(BATCH, SEQ_LEN, D_MODEL) * 2.0
    y = torch.randn(BATCH, SEQ_LEN, D_INNER)
    return [u, y]


def get_init_inputs():
    return [D_MODEL, D_INNER, NGROUPS, EPS]
