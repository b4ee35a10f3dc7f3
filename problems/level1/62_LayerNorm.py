"""Layer normalisation over the hidden dimension of a batch of token sequences, with a learned affine."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["layernorm", "normalization", "reduction"]

BATCH = 16
SEQ_LEN = 2048
HIDDEN = 4096
EPS = 1e-5

VARIANTS = [
    dict(BATCH=5, SEQ_LEN=3001, HIDDEN=5120),
    dict(BATCH=64, SEQ_LEN=1023, HIDDEN=1000),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, HIDDEN=128)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=9, HIDDEN=77),
    dict(BATCH=3, SEQ_LEN=7, HIDDEN=200),
]


class Model(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(hidden))
            self.norm.bias.copy_(0.2 * torch.randn(hidden))

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, HIDDEN) * 3.0 + 1.0]


def get_init_inputs():
    return [HIDDEN, EPS]
