"""Softplus with configurable beta and linear-regime threshold applied elementwise to wide-ranging pre-activations."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["softplus", "elementwise", "activation", "exp", "log"]

BATCH = 4096
FEATURES = 24576
BETA = 1.0
THRESHOLD = 20.0

VARIANTS = [
    dict(BATCH=1023, FEATURES=65537, BETA=2.0, THRESHOLD=10.0),
    dict(BATCH=12000, FEATURES=5555, BETA=0.5, THRESHOLD=20.0),
]
SMALL = dict(BATCH=24, FEATURES=320)
SMALL_VARIANTS = [
    dict(BATCH=7, FEATURES=211, BETA=2.0, THRESHOLD=10.0),
    dict(BATCH=31, FEATURES=57, BETA=0.5),
]


class Model(nn.Module):
    def __init__(self, beta, threshold):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x):
        return F.softplus(x, beta=self.beta, threshold=self.threshold)


def get_inputs():
    # std 8: a few percent of the elements fall in the linear (x * beta > threshold) regime
    return [torch.randn(BATCH, FEATURES) * 8.0]


def get_init_inputs():
    return [BETA, THRESHOLD]
