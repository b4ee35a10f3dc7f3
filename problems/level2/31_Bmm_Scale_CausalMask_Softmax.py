"""Causal self-attention probabilities: batched Q K^T per head, scaling by 1/sqrt(head_dim), masking of future positions, and softmax over the keys."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["bmm", "scale", "causal_mask", "masked_fill", "softmax", "attention"]

BATCH = 2
HEADS = 16
SEQ_LEN = 2048
HEAD_DIM = 128

VARIANTS = [
    dict(BATCH=1, HEADS=12, SEQ_LEN=3001, HEAD_DIM=64),
    dict(BATCH=4, HEADS=20, SEQ_LEN=1023, HEAD_DIM=96),
]
SMALL = dict(BATCH=1, HEADS=2, SEQ_LEN=16, HEAD_DIM=8)
SMALL_VARIANTS = [
    dict(BATCH=1, HEADS=3, SEQ_LEN=13, HEAD_DIM=5),
    dict(BATCH=2, HEADS=1, SEQ_LEN=9, HEAD_DIM=16),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        s = q.shape[-2]
        scores = torch.matmul(q, k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
        future = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        return F.softmax(scores, dim=-1)


def get_inputs():
    q = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM) * 1.5
    k = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM)
    return [q, k]


def get_init_inputs():
    return []
