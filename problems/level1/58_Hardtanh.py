"""Hardtanh clipping to [MIN_VAL, MAX_VAL] applied elementwise to a batch of 3D feature volumes."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["hardtanh", "elementwise", "activation", "clamp"]

BATCH = 8
CHANNELS = 48
DEPTH = 56
HEIGHT = 96
WIDTH = 96
MIN_VAL = -2.0
MAX_VAL = 2.0

VARIANTS = [
    dict(BATCH=3, CHANNELS=33, DEPTH=61, HEIGHT=127, WIDTH=129, MIN_VAL=-1.0, MAX_VAL=1.0),
    dict(BATCH=2, CHANNELS=96, DEPTH=40, HEIGHT=99, WIDTH=101, MIN_VAL=-0.5, MAX_VAL=3.0),
]
SMALL = dict(BATCH=2, CHANNELS=4, DEPTH=6, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=1, CHANNELS=3, DEPTH=5, HEIGHT=7, WIDTH=9, MIN_VAL=-1.0, MAX_VAL=1.0),
    dict(BATCH=3, CHANNELS=5, DEPTH=3, HEIGHT=11, WIDTH=13, MIN_VAL=-0.5, MAX_VAL=3.0),
]


class Model(nn.Module):
    def __init__(self, min_val, max_val):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x):
        return F.hardtanh(x, min_val=self.min_val, max_val=self.max_val)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH) * 3.0]


def get_init_inputs():
    return [MIN_VAL, MAX_VAL]
