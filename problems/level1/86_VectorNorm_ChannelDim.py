"""Vector p-norm (L2 by default, L1 in a variant) over the channel dimension of (batch, channels, length)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["norm", "reduction"]

BATCH = 64
CHANNELS = 512
LENGTH = 4096
ORD = 2.0

VARIANTS = [
    dict(BATCH=17, CHANNELS=1025, LENGTH=6001, ORD=1.0),
    dict(BATCH=384, CHANNELS=96, LENGTH=3333, ORD=2.0),
]
SMALL = dict(BATCH=2, CHANNELS=32, LENGTH=64)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=17, LENGTH=45, ORD=1.0),
    dict(BATCH=1, CHANNELS=129, LENGTH=21),
]


class Model(nn.Module):
    def __init__(self, ord):
        super().__init__()
        self.ord = ord

    def forward(self, x):
        return torch.linalg.vector_norm(x, ord=self.ord, dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH)
    return [x * torch.exp(torch.randn(BATCH, 1, LENGTH))]


def get_init_inputs():
    return [ORD]
