"""Heteroscedastic regression loss: a linear head predicting mean and raw variance, variance = softplus(raw) + min_var, and the Gaussian negative log-likelihood of the targets averaged over outputs."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "chunk", "softplus", "log", "subtract", "square", "divide", "mean", "gaussian_nll"]

BATCH = 8192
IN_FEATURES = 2048
OUT_FEATURES = 1024
MIN_VAR = 1e-3

VARIANTS = [
    dict(BATCH=3001, IN_FEATURES=1024, OUT_FEATURES=777),
    dict(BATCH=16384, IN_FEATURES=768, OUT_FEATURES=513),
]
SMALL = dict(BATCH=24, IN_FEATURES=32, OUT_FEATURES=10)
SMALL_VARIANTS = [
    dict(BATCH=7, IN_FEATURES=17, OUT_FEATURES=5),
    dict(BATCH=33, IN_FEATURES=40, OUT_FEATURES=13),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features, min_var):
        super().__init__()
        self.head = nn.Linear(in_features, 2 * out_features)
        self.min_var = min_var

    def forward(self, x, target):
        mean, raw_var = self.head(x).chunk(2, dim=-1)
        var = F.softplus(raw_var) + self.min_var
        nll = 0.5 * (torch.log(var) + (target - mean).pow(2) / var + math.log(2.0 * math.pi))
        return nll.mean(dim=-1)


def get_inputs():
    x = torch.randn(BATCH, IN_FEATURES)
    target = torch.randn(BATCH, OUT_FEATURES)
    return [x, target]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, MIN_VAR]
