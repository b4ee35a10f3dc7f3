"""Squeeze-and-excitation gating: the excitation linear (C/r to C), sigmoid, and per-channel rescaling of the feature map."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "sigmoid", "mul", "broadcast", "squeeze_excitation"]

BATCH = 128
CHANNELS = 256
REDUCED = 64
HEIGHT = 56
WIDTH = 56

VARIANTS = [
    dict(BATCH=96, CHANNELS=480, REDUCED=120, HEIGHT=37, WIDTH=41),
    dict(BATCH=256, CHANNELS=120, REDUCED=31, HEIGHT=57, WIDTH=55),
]
SMALL = dict(BATCH=2, CHANNELS=16, REDUCED=4, HEIGHT=5, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=1, CHANNELS=9, REDUCED=3, HEIGHT=7, WIDTH=3),
    dict(BATCH=3, CHANNELS=24, REDUCED=5, HEIGHT=4, WIDTH=5),
]


class Model(nn.Module):
    def __init__(self, channels, reduced):
        super().__init__()
        self.excite = nn.Linear(reduced, channels)

    def forward(self, squeezed, feature_map):
        gate = torch.sigmoid(self.excite(squeezed))
        return feature_map * gate[:, :, None, None]


def get_inputs():
    # the squeezed vector comes out of ReLU in the first excitation layer
    squeezed = F.relu(torch.randn(BATCH, REDUCED)) * 3.0
    feature_map = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [squeezed, feature_map]


def get_init_inputs():
    return [CHANNELS, REDUCED]
