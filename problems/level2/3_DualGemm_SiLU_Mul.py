"""SwiGLU gated feed-forward activation: bias-free gate and up projections of the same tokens, SiLU on the gate branch, and their elementwise product."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "silu", "mul", "glu", "swiglu"]

TOKENS = 4096
DIM = 2048
HIDDEN = 5632

VARIANTS = [
    dict(TOKENS=1537, DIM=4096, HIDDEN=11008),
    dict(TOKENS=8191, DIM=1024, HIDDEN=2731),
]
SMALL = dict(TOKENS=32, DIM=64, HIDDEN=96)
SMALL_VARIANTS = [
    dict(TOKENS=9, DIM=33, HIDDEN=50),
    dict(TOKENS=41, DIM=48, HIDDEN=23),
]


class Model(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return F.silu(self.gate_proj(x)) * self.up_proj(x)


def get_inputs():
    return [torch.randn(TOKENS, DIM)]


def get_init_inputs():
    return [DIM, HIDDEN]
