"""GELU with the tanh approximation applied elementwise to the hidden states of a transformer MLP."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gelu", "elementwise", "activation", "tanh"]

BATCH = 16
SEQ_LEN = 2048
HIDDEN = 3072

VARIANTS = [
    dict(BATCH=7, SEQ_LEN=1999, HIDDEN=4097),
    dict(BATCH=3, SEQ_LEN=4096, HIDDEN=5120),
]
SMALL = dict(BATCH=2, SEQ_LEN=32, HIDDEN=96)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=17, HIDDEN=75),
    dict(BATCH=3, SEQ_LEN=9, HIDDEN=131),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x, approximate="tanh")


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, HIDDEN) * 3.0]


def get_init_inputs():
    return []
