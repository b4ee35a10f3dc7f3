"""2D batch normalisation using the current batch's statistics (training-mode behaviour) with a learned affine."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["batchnorm", "normalization", "reduction"]

BATCH = 64
CHANNELS = 256
HEIGHT = 56
WIDTH = 56
EPS = 1e-5

VARIANTS = [
    dict(BATCH=47, CHANNELS=129, HEIGHT=97, WIDTH=101),
    dict(BATCH=128, CHANNELS=64, HEIGHT=75, WIDTH=75),
]
SMALL = dict(BATCH=4, CHANNELS=8, HEIGHT=9, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=5, HEIGHT=7, WIDTH=11),
    dict(BATCH=5, CHANNELS=3, HEIGHT=13, WIDTH=9),
]


class Model(nn.Module):
    def __init__(self, channels, eps):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(channels))
        self.bias = nn.Parameter(0.2 * torch.randn(channels))
        self.eps = eps

    def forward(self, x):
        # Always normalise with the batch's own mean and (biased) variance, whatever the module mode.
        return F.batch_norm(x, None, None, self.weight, self.bias, training=True, eps=self.eps)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 2.0 + 0.5]


def get_init_inputs():
    return [CHANNELS, EPS]
