"""Per-sample mean squared error between predictions and targets (elementwise MSE averaged over features)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["mse_loss", "loss", "reduction", "mean"]

BATCH = 4096
FEATURES = 16384

VARIANTS = [
    dict(BATCH=1023, FEATURES=65537),
    dict(BATCH=65536, FEATURES=1000),
]
SMALL = dict(BATCH=32, FEATURES=256)
SMALL_VARIANTS = [
    dict(BATCH=7, FEATURES=1001),
    dict(BATCH=45, FEATURES=33),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.mse_loss(predictions, targets, reduction="none").mean(dim=1)


def get_inputs():
    targets = torch.randn(BATCH, FEATURES)
    # each sample has its own error scale, so the per-sample losses spread over orders of magnitude
    noise_scale = torch.exp(torch.randn(BATCH, 1))
    predictions = targets + torch.randn(BATCH, FEATURES) * noise_scale
    return [predictions, targets]


def get_init_inputs():
    return []
