"""Normalisation of a whole tensor by its Frobenius norm, rescaled by sqrt(numel) so entries stay of order one."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["frobenius_norm", "normalization", "reduction", "norm"]

BATCH = 32
CHANNELS = 96
HEIGHT = 160
WIDTH = 160

VARIANTS = [
    dict(BATCH=11, CHANNELS=129, HEIGHT=211, WIDTH=199),
    dict(BATCH=64, CHANNELS=33, HEIGHT=127, WIDTH=255),
]
SMALL = dict(BATCH=2, CHANNELS=8, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=5, HEIGHT=9, WIDTH=7),
    dict(BATCH=1, CHANNELS=3, HEIGHT=17, WIDTH=21),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        # A single global reduction (the Frobenius norm of the whole tensor), then an elementwise scale.
        norm = torch.linalg.vector_norm(x)
        return x * (x.numel() ** 0.5 / norm)


def get_inputs():
    # per-(sample, channel) scales make the global norm depend strongly on the draw
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x * torch.exp(torch.randn(BATCH, CHANNELS, 1, 1))]


def get_init_inputs():
    return []
