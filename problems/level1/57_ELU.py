"""ELU with a configurable alpha applied elementwise to a batch of dense-layer activations."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["elu", "elementwise", "activation", "exp"]

BATCH = 8192
FEATURES = 12288
ALPHA = 1.3

VARIANTS = [
    dict(BATCH=3001, FEATURES=20000, ALPHA=1.0),
    dict(BATCH=16385, FEATURES=4095, ALPHA=0.5),
]
SMALL = dict(BATCH=32, FEATURES=256)
SMALL_VARIANTS = [
    dict(BATCH=9, FEATURES=99, ALPHA=1.0),
    dict(BATCH=27, FEATURES=43, ALPHA=0.5),
]


class Model(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return F.elu(x, alpha=self.alpha)


def get_inputs():
    return [torch.randn(BATCH, FEATURES) * 2.0]


def get_init_inputs():
    return [ALPHA]
