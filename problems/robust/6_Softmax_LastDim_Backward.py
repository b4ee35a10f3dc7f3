"""Softmax over the last dimension of attention-score-shaped logits; the output and the gradient of the logits are judged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["softmax"]

BATCH = 16
HEADS = 16
QUERY_LEN = 512
KEY_LEN = 512

VARIANTS = [
    dict(BATCH=8, HEADS=12, QUERY_LEN=1023, KEY_LEN=1023),
    dict(BATCH=64, HEADS=12, QUERY_LEN=197, KEY_LEN=197),
]
SMALL = dict(BATCH=2, HEADS=4, QUERY_LEN=32, KEY_LEN=48)
SMALL_VARIANTS = [
    dict(BATCH=3, HEADS=3, QUERY_LEN=17, KEY_LEN=33),
    dict(BATCH=1, HEADS=5, QUERY_LEN=9, KEY_LEN=131),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits):
        return F.softmax(logits, dim=-1)


def get_inputs():
    # std 2.5 logits: peaked but not one-hot rows.
    return [torch.randn(BATCH, HEADS, QUERY_LEN, KEY_LEN) * 2.5]


def get_init_inputs():
    return []
