"""Query projection with per-head QK-norm and rotary embedding: linear to heads * head_dim, RMSNorm of each head vector with a learned weight, and rotary position embedding in rotate-half form."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "rmsnorm", "rope", "mul", "add", "attention"]

BATCH = 4
SEQ_LEN = 2048
DIM = 2048
HEADS = 16
HEAD_DIM = 128
ROPE_THETA = 10000.0

VARIANTS = [
    dict(BATCH=1, SEQ_LEN=4099, DIM=3072, HEADS=24, HEAD_DIM=128),
    dict(BATCH=8, SEQ_LEN=513, DIM=1536, HEADS=20, HEAD_DIM=96),
]
SMALL = dict(BATCH=2, SEQ_LEN=8, DIM=32, HEADS=4, HEAD_DIM=8)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=11, DIM=17, HEADS=3, HEAD_DIM=6),
    dict(BATCH=3, SEQ_LEN=5, DIM=40, HEADS=2, HEAD_DIM=16),
]


class Model(nn.Module):
    def __init__(self, dim, heads, head_dim, seq_len, rope_theta):
        super().__init__()
        self.q_proj = nn.Linear(dim, heads * head_dim, bias=False)
        self.q_norm_weight = nn.Parameter(torch.ones(head_dim))
        self.heads = heads
        self.head_dim = head_dim
        inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        freqs = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos()[:, None, :])
        self.register_buffer("sin", emb.sin()[:, None, :])

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim)
        q = q * torch.rsqrt(q.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * self.q_norm_weight
        q1, q2 = q.chunk(2, dim=-1)
        rotated = torch.cat((-q2, q1), dim=-1)
        return q * self.cos + rotated * self.sin


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, DIM)]


def get_init_inputs():
    return [DIM, HEADS, HEAD_DIM, SEQ_LEN, ROPE_THETA]
