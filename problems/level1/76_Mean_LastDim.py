"""Mean over the last dimension of a batch of multichannel signals whose channels carry different DC offsets."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["mean", "reduction"]

BATCH = 256
CHANNELS = 1024
LENGTH = 512

VARIANTS = [
    dict(BATCH=65, CHANNELS=777, LENGTH=2049),
    dict(BATCH=1024, CHANNELS=2048, LENGTH=49),
]
SMALL = dict(BATCH=4, CHANNELS=32, LENGTH=64)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=17, LENGTH=45),
    dict(BATCH=5, CHANNELS=9, LENGTH=131),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.mean(x, dim=-1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH) * 2.0
    return [x + torch.randn(BATCH, CHANNELS, 1)]


def get_init_inputs():
    return []
