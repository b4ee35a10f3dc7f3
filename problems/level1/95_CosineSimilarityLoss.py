"""Per-sample cosine-similarity loss 1 - cos(a, b) between pairs of embedding vectors."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cosine_similarity", "loss", "reduction", "norm"]

BATCH = 16384
DIM = 4096
EPS = 1e-8

VARIANTS = [
    dict(BATCH=5001, DIM=8191),
    dict(BATCH=65537, DIM=1000),
]
SMALL = dict(BATCH=32, DIM=256)
SMALL_VARIANTS = [
    dict(BATCH=7, DIM=1001),
    dict(BATCH=45, DIM=33),
]


class Model(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, a, b):
        return 1.0 - F.cosine_similarity(a, b, dim=1, eps=self.eps)


def get_inputs():
    a = torch.randn(BATCH, DIM)
    # b is a noisy, randomly signed and scaled copy of a: cosines spread over (-1, 1)
    b = a * torch.randn(BATCH, 1) * 1.5 + torch.randn(BATCH, DIM)
    return [a, b]


def get_init_inputs():
    return [EPS]
