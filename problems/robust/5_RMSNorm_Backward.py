"""RMSNorm written out, x * rsqrt(mean(x^2, -1) + eps) * weight, on a (batch, seq, hidden) tensor; output and all gradients are judged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["rmsnorm", "normalization", "rsqrt", "mean"]

BATCH = 8
SEQ_LEN = 2048
HIDDEN = 4096
EPS = 1e-6

VARIANTS = [
    dict(BATCH=4, SEQ_LEN=1999, HIDDEN=5120),
    dict(BATCH=24, SEQ_LEN=1025, HIDDEN=1023),
]
SMALL = dict(BATCH=4, SEQ_LEN=24, HIDDEN=96)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=11, HIDDEN=129),
    dict(BATCH=2, SEQ_LEN=31, HIDDEN=45),
]


class Model(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(hidden).normal_(1.0, 0.2))
        self.eps = eps

    def forward(self, x):
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * inv_rms * self.weight


def get_inputs():
    # Per-row scales vary over a range so the normalization factor differs across rows.
    x = torch.randn(BATCH, SEQ_LEN, HIDDEN)
    return [x * (0.5 + 2.0 * torch.rand(BATCH, SEQ_LEN, 1))]


def get_init_inputs():
    return [HIDDEN, EPS]
