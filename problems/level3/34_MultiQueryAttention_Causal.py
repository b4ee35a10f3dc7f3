"""Causal multi-query attention layer: many query heads share a single key head and a single value head, followed by an output projection."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["attention", "multi_query", "causal", "softmax", "gemm", "bmm"]

BATCH = 8
SEQ_LEN = 1024
D_MODEL = 1024
NUM_HEADS = 16

VARIANTS = [
    dict(BATCH=2, SEQ_LEN=2049, D_MODEL=1536, NUM_HEADS=12),
    dict(BATCH=19, SEQ_LEN=300, D_MODEL=896, NUM_HEADS=14),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, D_MODEL=32, NUM_HEADS=4)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=11, D_MODEL=21, NUM_HEADS=3),
    dict(BATCH=1, SEQ_LEN=14, D_MODEL=30, NUM_HEADS=5),
]


class Model(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.kv_proj = nn.Linear(d_model, 2 * self.head_dim, bias=False)
        with torch.no_grad():  # trained-model-like attention sharpness: score std ~2 instead of ~0.3 at default init
            self.q_proj.weight.mul_(2.5)
            self.kv_proj.weight[: self.head_dim].mul_(2.5)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q = self.q_proj(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)  # (b, h, t, hd)
        k, v = self.kv_proj(x).unsqueeze(1).split(self.head_dim, dim=-1)              # (b, 1, t, hd)
        scores = (q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)                   # (b, h, t, t)
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        attn = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, t, d)
        return self.o_proj(y)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, D_MODEL)]


def get_init_inputs():
    return [D_MODEL, NUM_HEADS]
