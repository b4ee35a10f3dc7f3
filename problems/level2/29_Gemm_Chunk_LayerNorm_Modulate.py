"""DiT adaLN modulation: SiLU and a linear on the conditioning vector producing per-sample shift and scale, then LayerNorm of the tokens modulated as LN(x) * (1 + scale) + shift."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "silu", "chunk", "layernorm", "mul", "add", "broadcast", "adaln"]

BATCH = 64
TOKENS = 1024
DIM = 1152
COND_DIM = 1152

VARIANTS = [
    dict(BATCH=16, TOKENS=4096, DIM=768, COND_DIM=512),
    dict(BATCH=33, TOKENS=1025, DIM=1536, COND_DIM=1537),
]
SMALL = dict(BATCH=2, TOKENS=16, DIM=24, COND_DIM=32)
SMALL_VARIANTS = [
    dict(BATCH=1, TOKENS=9, DIM=33, COND_DIM=17),
    dict(BATCH=3, TOKENS=5, DIM=16, COND_DIM=41),
]


class Model(nn.Module):
    def __init__(self, dim, cond_dim):
        super().__init__()
        self.ada = nn.Linear(cond_dim, 2 * dim)
        self.dim = dim

    def forward(self, x, c):
        shift, scale = self.ada(F.silu(c)).chunk(2, dim=-1)
        h = F.layer_norm(x, (self.dim,), eps=1e-6)
        return h * (1.0 + scale.unsqueeze(1)) + shift.unsqueeze(1)


def get_inputs():
    x = torch.randn(BATCH, TOKENS, DIM) * 2.0
    c = torch.randn(BATCH, COND_DIM) * 3.0
    return [x, c]


def get_init_inputs():
    return [DIM, COND_DIM]
