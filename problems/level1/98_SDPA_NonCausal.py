"""Non-causal multi-head scaled dot-product attention (F.scaled_dot_product_attention) over (batch, heads, seq, head_dim)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["attention", "scaled_dot_product_attention", "softmax", "matmul"]

BATCH = 16
HEADS = 16
SEQ_LEN = 1024
HEAD_DIM = 64

VARIANTS = [
    dict(BATCH=3, HEADS=12, SEQ_LEN=1999, HEAD_DIM=64),
    dict(BATCH=32, HEADS=8, SEQ_LEN=577, HEAD_DIM=80),
]
SMALL = dict(BATCH=2, HEADS=2, SEQ_LEN=32, HEAD_DIM=16)
SMALL_VARIANTS = [
    dict(BATCH=1, HEADS=3, SEQ_LEN=17, HEAD_DIM=8),
    dict(BATCH=3, HEADS=2, SEQ_LEN=45, HEAD_DIM=24),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def get_inputs():
    # queries scaled up so that the attention distributions are peaked rather than nearly uniform
    q = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM) * 2.5
    k = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM)
    v = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM)
    return [q, k, v]


def get_init_inputs():
    return []
