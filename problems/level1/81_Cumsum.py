"""Inclusive cumulative sum along the last (time) dimension of a batch of multichannel signals."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cumsum", "scan"]

BATCH = 32
CHANNELS = 256
LENGTH = 8192

VARIANTS = [
    dict(BATCH=5, CHANNELS=1001, LENGTH=10007),
    dict(BATCH=256, CHANNELS=128, LENGTH=2049),
]
SMALL = dict(BATCH=2, CHANNELS=16, LENGTH=256)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=7, LENGTH=333),
    dict(BATCH=1, CHANNELS=33, LENGTH=65),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=-1)


def get_inputs():
    # scaled so partial sums stay O(1): an fp32 scan in any order then stays well inside 1e-4
    return [torch.randn(BATCH, CHANNELS, LENGTH) * LENGTH ** -0.5]


def get_init_inputs():
    return []
