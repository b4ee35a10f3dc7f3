"""Causal grouped-query attention layer: query heads are split into groups that each share one key/value head, followed by an output projection."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["attention", "grouped_query", "causal", "softmax", "gemm", "bmm", "repeat_interleave"]

BATCH = 4
SEQ_LEN = 1024
D_MODEL = 2048
NUM_HEADS = 16
NUM_KV_HEADS = 4
HEAD_DIM = 128

VARIANTS = [
    dict(BATCH=2, SEQ_LEN=1537, D_MODEL=1792, NUM_HEADS=28, NUM_KV_HEADS=4, HEAD_DIM=64),
    dict(BATCH=11, SEQ_LEN=411, D_MODEL=1000, NUM_HEADS=12, NUM_KV_HEADS=3, HEAD_DIM=96),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, D_MODEL=32, NUM_HEADS=4, NUM_KV_HEADS=2, HEAD_DIM=8)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=13, D_MODEL=27, NUM_HEADS=6, NUM_KV_HEADS=3, HEAD_DIM=5),
    dict(BATCH=3, SEQ_LEN=9, D_MODEL=20, NUM_HEADS=4, NUM_KV_HEADS=1, HEAD_DIM=7),
]


class Model(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, head_dim):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim
        self.q_proj = nn.Linear(d_model, num_heads * head_dim, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * head_dim, bias=False)
        with torch.no_grad():  # trained-model-like attention sharpness: score std ~2 instead of ~0.3 at default init
            self.q_proj.weight.mul_(2.5)
            self.k_proj.weight.mul_(2.5)
        self.o_proj = nn.Linear(num_heads * head_dim, d_model, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
        group = self.num_heads // self.num_kv_heads
        k = k.repeat_interleave(group, dim=1)     # (b, h, t, hd)
        v = v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        attn = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, t, self.num_heads * self.head_dim)
        return self.o_proj(y)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, D_MODEL)]


def get_init_inputs():
    return [D_MODEL, NUM_HEADS, NUM_KV_HEADS, HEAD_DIM]
