"""Windowed attention probabilities with a learned relative position bias (Swin style): batched Q K^T inside each window, scaling, addition of the per-head bias gathered from the relative-position table, and softmax."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["bmm", "scale", "gather", "bias", "add", "softmax", "attention"]

NUM_WINDOWS = 8192
HEADS = 3
WINDOW = 7
HEAD_DIM = 32

VARIANTS = [
    dict(NUM_WINDOWS=2048, HEADS=6, WINDOW=8, HEAD_DIM=32),
    dict(NUM_WINDOWS=1501, HEADS=5, WINDOW=12, HEAD_DIM=24),
]
SMALL = dict(NUM_WINDOWS=4, HEADS=2, WINDOW=3, HEAD_DIM=8)
SMALL_VARIANTS = [
    dict(NUM_WINDOWS=5, HEADS=3, WINDOW=3, HEAD_DIM=7),
    dict(NUM_WINDOWS=2, HEADS=2, WINDOW=5, HEAD_DIM=4),
]


class Model(nn.Module):
    def __init__(self, heads, window, head_dim):
        super().__init__()
        # trained-magnitude relative position bias table ((2W-1)^2 offsets, one entry per head)
        self.bias_table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.5)
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)
        self.register_buffer("rel_index", rel[..., 0] * (2 * window - 1) + rel[..., 1])
        self.heads = heads
        self.scale = head_dim ** -0.5

    def forward(self, q, k):
        n = q.shape[-2]
        attn = torch.matmul(q * self.scale, k.transpose(-2, -1))
        bias = self.bias_table[self.rel_index.view(-1)].view(n, n, self.heads).permute(2, 0, 1)
        return F.softmax(attn + bias.unsqueeze(0), dim=-1)


def get_inputs():
    n = WINDOW * WINDOW
    q = torch.randn(NUM_WINDOWS, HEADS, n, HEAD_DIM)
    k = torch.randn(NUM_WINDOWS, HEADS, n, HEAD_DIM)
    return [q, k]


def get_init_inputs():
    return [HEADS, WINDOW, HEAD_DIM]
