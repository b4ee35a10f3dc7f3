"""RMS normalisation over the hidden dimension (x / sqrt(mean(x^2) + eps) * weight), written out by hand."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["rmsnorm", "normalization", "reduction", "rsqrt"]

BATCH = 8
SEQ_LEN = 4096
HIDDEN = 4096
EPS = 1e-6

VARIANTS = [
    dict(BATCH=3, SEQ_LEN=2777, HIDDEN=8192),
    dict(BATCH=32, SEQ_LEN=1025, HIDDEN=1536),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, HIDDEN=128)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=11, HIDDEN=99),
    dict(BATCH=3, SEQ_LEN=5, HIDDEN=257),
]


class Model(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x):
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * inv_rms * self.weight


def get_inputs():
    # tokens of very different magnitudes, as in a residual stream
    x = torch.randn(BATCH, SEQ_LEN, HIDDEN)
    return [x * torch.exp(torch.randn(BATCH, SEQ_LEN, 1))]


def get_init_inputs():
    return [HIDDEN, EPS]
