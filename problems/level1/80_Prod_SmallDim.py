"""Product over a small middle dimension of factors close to one (batch, factors, features)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["prod", "reduction"]

BATCH = 128
FACTORS = 12
FEATURES = 65536

VARIANTS = [
    dict(BATCH=65, FACTORS=31, FEATURES=50001),
    dict(BATCH=1024, FACTORS=5, FEATURES=16383),
]
SMALL = dict(BATCH=4, FACTORS=12, FEATURES=256)
SMALL_VARIANTS = [
    dict(BATCH=3, FACTORS=31, FEATURES=77),
    dict(BATCH=9, FACTORS=5, FEATURES=131),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.prod(x, dim=1)


def get_inputs():
    # factors around 1 (std 0.15): the products are finite and spread over roughly [0.3, 3]
    return [1.0 + 0.15 * torch.randn(BATCH, FACTORS, FEATURES)]


def get_init_inputs():
    return []
