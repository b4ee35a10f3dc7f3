"""L2 normalisation of a batch of embedding vectors along the feature dimension (F.normalize)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["l2_normalize", "normalization", "reduction", "norm"]

BATCH = 32768
DIM = 2048
EPS = 1e-12

VARIANTS = [
    dict(BATCH=100003, DIM=768),
    dict(BATCH=4097, DIM=12289),
]
SMALL = dict(BATCH=64, DIM=128)
SMALL_VARIANTS = [
    dict(BATCH=17, DIM=75),
    dict(BATCH=5, DIM=513),
]


class Model(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        return F.normalize(x, p=2.0, dim=1, eps=self.eps)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x * torch.exp(torch.randn(BATCH, 1))]


def get_init_inputs():
    return [EPS]
