"""Mamba block: input projection into a gated pair, causal depthwise conv1d + SiLU, input-dependent (selective) step size and B/C, a sequential diagonal state-space scan over time, skip term, SiLU gating and output projection."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["ssm", "mamba", "selective_scan", "scan", "loop", "conv1d", "depthwise", "softplus", "silu", "exp", "gemm", "einsum"]

BATCH = 8
SEQ_LEN = 256
D_MODEL = 512
EXPAND = 2
D_STATE = 16
D_CONV = 4

VARIANTS = [
    dict(BATCH=3, SEQ_LEN=257, D_MODEL=768, EXPAND=2, D_STATE=16, D_CONV=4),
    dict(BATCH=16, SEQ_LEN=200, D_MODEL=320, EXPAND=3, D_STATE=24, D_CONV=3),
]
SMALL = dict(BATCH=2, SEQ_LEN=12, D_MODEL=16, EXPAND=2, D_STATE=8, D_CONV=4)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=15, D_MODEL=13, EXPAND=2, D_STATE=5, D_CONV=3),
    dict(BATCH=3, SEQ_LEN=9, D_MODEL=10, EXPAND=3, D_STATE=7, D_CONV=4),
]


class Model(nn.Module):
    def __init__(self, d_model, expand, d_state, d_conv):
        super().__init__()
        d_inner = expand * d_model
        dt_rank = math.ceil(d_model / 16)
        self.d_inner, self.d_state, self.dt_rank = d_inner, d_state, dt_rank
        self.in_proj = nn.Linear(d_model, 2 * d_inner, bias=False)
        self.conv1d = nn.Conv1d(d_inner, d_inner, d_conv, groups=d_inner, padding=d_conv - 1)
        self.x_proj = nn.Linear(d_inner, dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(dt_rank, d_inner, bias=True)
        # step sizes initialised log-uniformly in [1e-3, 1e-1] through the inverse softplus
        dt = torch.exp(torch.rand(d_inner) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, d_state + 1, dtype=torch.float32)).repeat(d_inner, 1))
        self.D = nn.Parameter(torch.ones(d_inner))
        self.out_proj = nn.Linear(d_inner, d_model, bias=False)

    def forward(self, x):
        # x: (batch, seq_len, d_model)
        b, l, _ = x.shape
        u, z = self.in_proj(x).chunk(2, dim=-1)                          # (b, l, d_inner) each
        u = F.silu(self.conv1d(u.transpose(1, 2))[..., :l]).transpose(1, 2)
        dt, B, C = self.x_proj(u).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        delta = F.softplus(self.dt_proj(dt))                             # (b, l, d_inner)
        A = -torch.exp(self.A_log)                                       # (d_inner, d_state)
        dA = torch.exp(delta.unsqueeze(-1) * A)                          # (b, l, d_inner, d_state)
        dBu = delta.unsqueeze(-1) * B.unsqueeze(2) * u.unsqueeze(-1)     # (b, l, d_inner, d_state)
        h = torch.zeros(b, self.d_inner, self.d_state, device=x.device, dtype=x.dtype)
        ys = []
        for t in range(l):
            h = dA[:, t] * h + dBu[:, t]
            ys.append(torch.einsum("bdn,bn->bd", h, C[:, t]))
        y = torch.stack(ys, dim=1) + u * self.D                          # (b, l, d_inner)
        y = y * F.silu(z)
        return self.out_proj(y)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, D_MODEL)]


def get_init_inputs():
    return [D_MODEL, EXPAND, D_STATE, D_CONV]
