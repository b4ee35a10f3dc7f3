"""Softmax over the last dimension of a matrix of classifier logits."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["softmax", "reduction", "exp"]

BATCH = 4096
CLASSES = 32768

VARIANTS = [
    dict(BATCH=100003, CLASSES=1000),
    dict(BATCH=1023, CLASSES=131073),
]
SMALL = dict(BATCH=32, CLASSES=512)
SMALL_VARIANTS = [
    dict(BATCH=7, CLASSES=1001),
    dict(BATCH=45, CLASSES=33),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, CLASSES) * 3.0]


def get_init_inputs():
    return []
