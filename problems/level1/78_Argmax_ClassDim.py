"""Per-pixel argmax over the class dimension of segmentation logits (batch, classes, height, width)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["argmax", "reduction"]

BATCH = 16
CLASSES = 150
HEIGHT = 256
WIDTH = 256

VARIANTS = [
    dict(BATCH=4, CLASSES=19, HEIGHT=1025, WIDTH=2047),
    dict(BATCH=49, CLASSES=81, HEIGHT=127, WIDTH=191),
]
SMALL = dict(BATCH=2, CLASSES=21, HEIGHT=16, WIDTH=16)
SMALL_VARIANTS = [
    dict(BATCH=1, CLASSES=19, HEIGHT=13, WIDTH=27),
    dict(BATCH=3, CLASSES=7, HEIGHT=11, WIDTH=9),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.argmax(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CLASSES, HEIGHT, WIDTH) * 3.0]


def get_init_inputs():
    return []
