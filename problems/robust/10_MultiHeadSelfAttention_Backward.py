"""Multi-head self-attention written out (fused QKV projection, softmax(QK^T/sqrt(d))V per head, output projection); output and all gradients are judged."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["attention", "gemm", "linear", "bmm", "softmax", "transpose"]

BATCH = 8
SEQ_LEN = 512
EMBED_DIM = 768
NUM_HEADS = 12

VARIANTS = [
    dict(BATCH=4, SEQ_LEN=1023, EMBED_DIM=1024, NUM_HEADS=16),
    dict(BATCH=16, SEQ_LEN=197, EMBED_DIM=384, NUM_HEADS=6),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, EMBED_DIM=32, NUM_HEADS=4)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=9, EMBED_DIM=24, NUM_HEADS=3),
    dict(BATCH=1, SEQ_LEN=37, EMBED_DIM=40, NUM_HEADS=5),
]


class Model(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        assert embed_dim % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        # Unit-variance q and k, so attention scores have std ~1 (not uniform attention).
        with torch.no_grad():
            self.qkv.weight.normal_(0.0, embed_dim ** -0.5)

    def forward(self, x):
        b, s, e = x.shape
        qkv = self.qkv(x).reshape(b, s, 3, self.num_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)           # each (b, h, s, d)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        attn = torch.softmax(scores, dim=-1)
        out = torch.matmul(attn, v)                                # (b, h, s, d)
        out = out.transpose(1, 2).reshape(b, s, e)
        return self.proj(out)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, EMBED_DIM)]


def get_init_inputs():
    return [EMBED_DIM, NUM_HEADS]
