"""Elementwise Huber loss (reduction='none') with a configurable delta between regression outputs and targets."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["huber_loss", "loss", "elementwise"]

BATCH = 8192
FEATURES = 8192
DELTA = 1.0

VARIANTS = [
    dict(BATCH=3000, FEATURES=20001, DELTA=0.5),
    dict(BATCH=100001, FEATURES=777, DELTA=2.0),
]
SMALL = dict(BATCH=32, FEATURES=256)
SMALL_VARIANTS = [
    dict(BATCH=9, FEATURES=301, DELTA=0.5),
    dict(BATCH=41, FEATURES=27, DELTA=2.0),
]


class Model(nn.Module):
    def __init__(self, delta):
        super().__init__()
        self.delta = delta

    def forward(self, predictions, targets):
        return F.huber_loss(predictions, targets, reduction="none", delta=self.delta)


def get_inputs():
    # |predictions - targets| has std ~2.8, so both the quadratic and the linear branch are exercised
    return [torch.randn(BATCH, FEATURES) * 2.0, torch.randn(BATCH, FEATURES) * 2.0]


def get_init_inputs():
    return [DELTA]
