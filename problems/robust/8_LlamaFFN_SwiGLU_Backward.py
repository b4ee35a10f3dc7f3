"""LLaMA-style SwiGLU feed-forward block, w2(silu(w1 x) * w3 x) without biases; output and all gradients are judged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["gemm", "linear", "silu", "swiglu", "mul", "mlp"]

BATCH = 4
SEQ_LEN = 1024
DIM = 1024
HIDDEN = 2816

VARIANTS = [
    dict(BATCH=3, SEQ_LEN=999, DIM=1536, HIDDEN=4096),
    dict(BATCH=8, SEQ_LEN=511, DIM=768, HIDDEN=2047),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, DIM=64, HIDDEN=176)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=7, DIM=33, HIDDEN=91),
    dict(BATCH=1, SEQ_LEN=29, DIM=48, HIDDEN=129),
]


class Model(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)  # gate projection
        self.w3 = nn.Linear(dim, hidden, bias=False)  # up projection
        self.w2 = nn.Linear(hidden, dim, bias=False)  # down projection

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, DIM)]


def get_init_inputs():
    return [DIM, HIDDEN]
