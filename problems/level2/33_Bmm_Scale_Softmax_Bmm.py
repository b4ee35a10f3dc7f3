"""Non-causal scaled dot-product attention written out: batched Q K^T, scaling by 1/sqrt(head_dim), softmax over the keys, and the probability-weighted sum of the values."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["bmm", "scale", "softmax", "attention"]

BATCH = 4
HEADS = 16
SEQ_LEN = 1024
HEAD_DIM = 64

VARIANTS = [
    dict(BATCH=2, HEADS=12, SEQ_LEN=2047, HEAD_DIM=64),
    dict(BATCH=16, HEADS=8, SEQ_LEN=577, HEAD_DIM=96),
]
SMALL = dict(BATCH=1, HEADS=2, SEQ_LEN=16, HEAD_DIM=8)
SMALL_VARIANTS = [
    dict(BATCH=1, HEADS=3, SEQ_LEN=11, HEAD_DIM=5),
    dict(BATCH=2, HEADS=1, SEQ_LEN=7, HEAD_DIM=12),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
        return torch.matmul(F.softmax(scores, dim=-1), v)


def get_inputs():
    q = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM) * 1.5
    k = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM)
    v = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM)
    return [q, k, v]


def get_init_inputs():
    return []
