"""Causal multi-head scaled dot-product attention (F.scaled_dot_product_attention, is_causal=True)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["attention", "scaled_dot_product_attention", "causal", "softmax", "matmul"]

BATCH = 4
HEADS = 16
SEQ_LEN = 2048
HEAD_DIM = 128

VARIANTS = [
    dict(BATCH=2, HEADS=12, SEQ_LEN=3001, HEAD_DIM=64),
    dict(BATCH=16, HEADS=8, SEQ_LEN=1000, HEAD_DIM=128),
]
SMALL = dict(BATCH=2, HEADS=2, SEQ_LEN=32, HEAD_DIM=16)
SMALL_VARIANTS = [
    dict(BATCH=1, HEADS=3, SEQ_LEN=19, HEAD_DIM=8),
    dict(BATCH=3, HEADS=2, SEQ_LEN=41, HEAD_DIM=32),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    q = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM) * 2.0
    k = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM)
    v = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM)
    return [q, k, v]


def get_init_inputs():
    return []
