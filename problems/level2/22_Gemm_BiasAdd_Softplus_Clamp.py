"""Mamba-style time-step projection: low-rank linear up-projection to per-channel dt, addition of the dt bias, softplus, and clamping to [dt_min, dt_max]."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "softplus", "clamp", "mamba"]

BATCH = 8
SEQ_LEN = 2048
DT_RANK = 160
D_INNER = 5120
DT_MIN = 0.001
DT_MAX = 0.05

VARIANTS = [
    dict(BATCH=3, SEQ_LEN=4001, DT_RANK=96, D_INNER=3072),
    dict(BATCH=16, SEQ_LEN=1025, DT_RANK=256, D_INNER=8191),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, DT_RANK=8, D_INNER=48)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=21, DT_RANK=5, D_INNER=33),
    dict(BATCH=3, SEQ_LEN=7, DT_RANK=12, D_INNER=64),
]


class Model(nn.Module):
    def __init__(self, dt_rank, d_inner, dt_min, dt_max):
        super().__init__()
        self.dt_proj = nn.Linear(dt_rank, d_inner, bias=False)
        # Mamba init: dt log-uniform in [1e-3, 1e-1], bias = inverse softplus(dt)
        dt = torch.exp(torch.rand(d_inner) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))
        self.dt_min = dt_min
        self.dt_max = dt_max

    def forward(self, x_dbl):
        dt = F.softplus(self.dt_proj(x_dbl) + self.dt_bias)
        return dt.clamp(self.dt_min, self.dt_max)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, DT_RANK) * 2.0]


def get_init_inputs():
    return [DT_RANK, D_INNER, DT_MIN, DT_MAX]
