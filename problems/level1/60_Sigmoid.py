"""Sigmoid applied elementwise to a tensor of attention-like gating logits (batch, heads, queries, keys)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["sigmoid", "elementwise", "activation"]

BATCH = 16
HEADS = 16
SEQ_Q = 640
SEQ_K = 640

VARIANTS = [
    dict(BATCH=3, HEADS=12, SEQ_Q=1021, SEQ_K=1531),
    dict(BATCH=32, HEADS=8, SEQ_Q=577, SEQ_K=400),
]
SMALL = dict(BATCH=2, HEADS=4, SEQ_Q=16, SEQ_K=24)
SMALL_VARIANTS = [
    dict(BATCH=1, HEADS=3, SEQ_Q=9, SEQ_K=17),
    dict(BATCH=3, HEADS=2, SEQ_Q=13, SEQ_K=7),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(BATCH, HEADS, SEQ_Q, SEQ_K) * 4.0]


def get_init_inputs():
    return []
