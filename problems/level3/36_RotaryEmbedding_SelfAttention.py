"""Bidirectional multi-head self-attention with rotary position embeddings (RoPE, rotate-half form) applied to queries and keys, followed by an output projection."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["attention", "rope", "rotary_embedding", "softmax", "gemm", "bmm", "sin", "cos"]

BATCH = 8
SEQ_LEN = 1024
D_MODEL = 768
NUM_HEADS = 12

VARIANTS = [
    dict(BATCH=3, SEQ_LEN=2001, D_MODEL=1024, NUM_HEADS=8),
    dict(BATCH=24, SEQ_LEN=257, D_MODEL=640, NUM_HEADS=20),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, D_MODEL=32, NUM_HEADS=4)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=13, D_MODEL=36, NUM_HEADS=3),
    dict(BATCH=3, SEQ_LEN=9, D_MODEL=20, NUM_HEADS=2),
]


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    def __init__(self, d_model, num_heads, rope_base=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads   # must be even
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        with torch.no_grad():  # trained-model-like attention sharpness: score std ~2 instead of ~0.3 at default init
            self.qkv.weight[: 2 * d_model].mul_(2.5)
        self.out = nn.Linear(d_model, d_model, bias=False)
        inv_freq = 1.0 / (rope_base ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        pos = torch.arange(t, device=x.device, dtype=torch.float32)
        freqs = torch.outer(pos, self.inv_freq)             # (t, hd/2)
        emb = torch.cat((freqs, freqs), dim=-1)             # (t, hd)
        cos, sin = emb.cos(), emb.sin()
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        attn = ((q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)).softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, t, d)
        return self.out(y)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, D_MODEL)]


def get_init_inputs():
    return [D_MODEL, NUM_HEADS]
