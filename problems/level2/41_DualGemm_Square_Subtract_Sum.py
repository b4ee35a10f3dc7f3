"""Factorization machine on dense features: first-order linear term plus the second-order interaction 0.5 * sum_k[(x V)^2 - (x^2)(V^2)]."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "square", "subtract", "sum", "scale", "add", "factorization_machine"]

BATCH = 8192
NUM_FEATURES = 4096
NUM_FACTORS = 256

VARIANTS = [
    dict(BATCH=3001, NUM_FEATURES=10000, NUM_FACTORS=64),
    dict(BATCH=16384, NUM_FEATURES=1000, NUM_FACTORS=129),
]
SMALL = dict(BATCH=24, NUM_FEATURES=40, NUM_FACTORS=8)
SMALL_VARIANTS = [
    dict(BATCH=7, NUM_FEATURES=33, NUM_FACTORS=5),
    dict(BATCH=31, NUM_FEATURES=16, NUM_FACTORS=13),
]


class Model(nn.Module):
    def __init__(self, num_features, num_factors):
        super().__init__()
        self.linear = nn.Linear(num_features, 1)
        self.factors = nn.Parameter(torch.randn(num_features, num_factors) / num_features ** 0.5)

    def forward(self, x):
        xv = torch.matmul(x, self.factors)
        x2v2 = torch.matmul(x * x, self.factors * self.factors)
        interaction = 0.5 * (xv * xv - x2v2).sum(dim=1)
        return self.linear(x).squeeze(1) + interaction


def get_inputs():
    # dense-encoded sparse feature vectors: about 10% of the features are active per sample
    active = (torch.rand(BATCH, NUM_FEATURES) < 0.1).float()
    return [torch.randn(BATCH, NUM_FEATURES) * 2.0 * active]


def get_init_inputs():
    return [NUM_FEATURES, NUM_FACTORS]
