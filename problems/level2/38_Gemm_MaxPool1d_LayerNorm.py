"""Maxout layer with output normalization: linear to units * pieces features, max over each group of consecutive pieces (max_pool1d along the feature axis), and LayerNorm."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "max_pool1d", "maxout", "layernorm"]

BATCH = 4096
IN_FEATURES = 2048
UNITS = 2048
PIECES = 4

VARIANTS = [
    dict(BATCH=1500, IN_FEATURES=1024, UNITS=1001, PIECES=3),
    dict(BATCH=8191, IN_FEATURES=768, UNITS=512, PIECES=5),
]
SMALL = dict(BATCH=24, IN_FEATURES=32, UNITS=20, PIECES=3)
SMALL_VARIANTS = [
    dict(BATCH=7, IN_FEATURES=17, UNITS=11, PIECES=2),
    dict(BATCH=33, IN_FEATURES=40, UNITS=9, PIECES=5),
]


class Model(nn.Module):
    def __init__(self, in_features, units, pieces):
        super().__init__()
        self.fc = nn.Linear(in_features, units * pieces)
        self.norm = nn.LayerNorm(units)
        self.pieces = pieces

    def forward(self, x):
        h = F.max_pool1d(self.fc(x).unsqueeze(1), kernel_size=self.pieces).squeeze(1)
        return self.norm(h)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, UNITS, PIECES]
