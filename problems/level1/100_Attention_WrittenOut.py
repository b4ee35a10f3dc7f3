"""Multi-head attention written out by hand: softmax(Q K^T / sqrt(d)) V with the score matrix materialised."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["attention", "matmul", "softmax"]

BATCH = 8
HEADS = 12
SEQ_LEN = 1024
HEAD_DIM = 64

VARIANTS = [
    dict(BATCH=4, HEADS=16, SEQ_LEN=1537, HEAD_DIM=64),
    dict(BATCH=32, HEADS=8, SEQ_LEN=577, HEAD_DIM=96),
]
SMALL = dict(BATCH=2, HEADS=2, SEQ_LEN=32, HEAD_DIM=16)
SMALL_VARIANTS = [
    dict(BATCH=1, HEADS=3, SEQ_LEN=23, HEAD_DIM=8),
    dict(BATCH=3, HEADS=2, SEQ_LEN=37, HEAD_DIM=24),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        weights = torch.softmax(scores, dim=-1)
        return torch.matmul(weights, v)


def get_inputs():
    q = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM) * 2.0
    k = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM)
    v = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM)
    return [q, k, v]


def get_init_inputs():
    return []
