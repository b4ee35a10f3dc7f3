"""Sum over the sequence (middle) dimension of a batch of token embeddings."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["sum", "reduction"]

BATCH = 32
SEQ_LEN = 4096
HIDDEN = 1024

VARIANTS = [
    dict(BATCH=11, SEQ_LEN=9001, HIDDEN=1111),
    dict(BATCH=256, SEQ_LEN=257, HIDDEN=1536),
]
SMALL = dict(BATCH=4, SEQ_LEN=64, HIDDEN=96)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=37, HIDDEN=51),
    dict(BATCH=5, SEQ_LEN=129, HIDDEN=17),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, HIDDEN)]


def get_init_inputs():
    return []
