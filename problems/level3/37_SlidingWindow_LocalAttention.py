"""Multi-head self-attention restricted to a symmetric local band (each token attends to keys at most WINDOW positions away), computed with a masked full score matrix, plus output projection."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["attention", "sliding_window", "local_attention", "mask", "softmax", "gemm", "bmm"]

BATCH = 4
SEQ_LEN = 2048
D_MODEL = 512
NUM_HEADS = 8
WINDOW = 256

VARIANTS = [
    dict(BATCH=2, SEQ_LEN=3001, D_MODEL=384, NUM_HEADS=6, WINDOW=129),
    dict(BATCH=16, SEQ_LEN=777, D_MODEL=768, NUM_HEADS=12, WINDOW=64),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, D_MODEL=32, NUM_HEADS=4, WINDOW=3)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=15, D_MODEL=24, NUM_HEADS=3, WINDOW=2),
    dict(BATCH=3, SEQ_LEN=11, D_MODEL=20, NUM_HEADS=2, WINDOW=4),
]


class Model(nn.Module):
    def __init__(self, d_model, num_heads, window):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.window = window
        self.qkv = nn.Linear(d_model, 3 * d_model)
        with torch.no_grad():  # trained-model-like attention sharpness: score std ~2 instead of ~0.3 at default init
            self.qkv.weight[: 2 * d_model].mul_(2.5)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)       # (b, h, t, t)
        pos = torch.arange(t, device=x.device)
        outside = (pos[:, None] - pos[None, :]).abs() > self.window         # (t, t)
        attn = scores.masked_fill(outside, float("-inf")).softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, t, d)
        return self.out(y)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, D_MODEL)]


def get_init_inputs():
    return [D_MODEL, NUM_HEADS, WINDOW]
