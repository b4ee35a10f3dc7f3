"""Bidirectional multi-head self-attention with a learned per-head bias indexed by the clipped relative distance between query and key positions, followed by an output projection."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["attention", "relative_position_bias", "gather", "softmax", "gemm", "bmm"]

BATCH = 8
SEQ_LEN = 1024
D_MODEL = 768
NUM_HEADS = 12
MAX_DISTANCE = 128

VARIANTS = [
    dict(BATCH=3, SEQ_LEN=1999, D_MODEL=512, NUM_HEADS=8, MAX_DISTANCE=255),
    dict(BATCH=24, SEQ_LEN=301, D_MODEL=1024, NUM_HEADS=16, MAX_DISTANCE=32),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, D_MODEL=32, NUM_HEADS=4, MAX_DISTANCE=5)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=13, D_MODEL=24, NUM_HEADS=3, MAX_DISTANCE=4),
    dict(BATCH=3, SEQ_LEN=9, D_MODEL=20, NUM_HEADS=2, MAX_DISTANCE=7),
]


class Model(nn.Module):
    def __init__(self, d_model, num_heads, max_distance):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.max_distance = max_distance
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        with torch.no_grad():  # trained-model-like attention sharpness: score std ~2 instead of ~0.3 at default init
            self.qkv.weight[: 2 * d_model].mul_(2.5)
        self.out = nn.Linear(d_model, d_model, bias=False)
        # one bias per head for each relative offset in [-max_distance, max_distance]
        self.rel_bias = nn.Parameter(torch.randn(2 * max_distance + 1, num_heads))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)          # (b, h, t, t)
        pos = torch.arange(t, device=x.device)
        rel = (pos[None, :] - pos[:, None]).clamp(-self.max_distance, self.max_distance) + self.max_distance
        bias = self.rel_bias[rel].permute(2, 0, 1)                             # (h, t, t)
        attn = (scores + bias[None]).softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, t, d)
        return self.out(y)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, D_MODEL)]


def get_init_inputs():
    return [D_MODEL, NUM_HEADS, MAX_DISTANCE]
