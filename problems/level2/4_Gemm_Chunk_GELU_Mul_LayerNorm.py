"""GEGLU feed-forward activation with a sub-layer norm: one linear to twice the hidden width, split into halves a and b, GELU(a) * b, then LayerNorm of the hidden vector."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "chunk", "gelu", "mul", "glu", "layernorm"]

BATCH = 16
SEQ_LEN = 512
DIM = 1024
HIDDEN = 4096

VARIANTS = [
    dict(BATCH=5, SEQ_LEN=1023, DIM=768, HIDDEN=3071),
    dict(BATCH=33, SEQ_LEN=257, DIM=1280, HIDDEN=2560),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, DIM=48, HIDDEN=64)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=19, DIM=33, HIDDEN=41),
    dict(BATCH=3, SEQ_LEN=7, DIM=20, HIDDEN=90),
]


class Model(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.proj = nn.Linear(dim, 2 * hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x):
        a, b = self.proj(x).chunk(2, dim=-1)
        return self.norm(F.gelu(a) * b)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, DIM)]


def get_init_inputs():
    return [DIM, HIDDEN]
