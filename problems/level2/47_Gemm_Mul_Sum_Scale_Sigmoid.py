"""Bilinear (RESCAL-style) link scoring: the head embedding projected by a learned relation matrix, multiplied elementwise by the tail embedding and summed over features, scaled by 1/sqrt(dim), and passed through a sigmoid."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "mul", "sum", "scale", "sigmoid", "bilinear"]

PAIRS = 16384
DIM = 2048

VARIANTS = [
    dict(PAIRS=5001, DIM=1000),
    dict(PAIRS=32767, DIM=512),
]
SMALL = dict(PAIRS=24, DIM=40)
SMALL_VARIANTS = [
    dict(PAIRS=7, DIM=33),
    dict(PAIRS=41, DIM=16),
]


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.relation = nn.Linear(dim, dim, bias=False)
        nn.init.normal_(self.relation.weight, std=dim ** -0.5)
        self.scale = dim ** -0.5

    def forward(self, head, tail):
        score = (self.relation(head) * tail).sum(dim=-1) * self.scale
        return torch.sigmoid(score)


def get_inputs():
    head = torch.randn(PAIRS, DIM)
    tail = torch.randn(PAIRS, DIM) * 1.5
    return [head, tail]


def get_init_inputs():
    return [DIM]
