"""Actor-critic encoder trunk (DrQ-v2 style): linear projection of flattened convolutional features to a latent, LayerNorm, and tanh."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "layernorm", "tanh"]

BATCH = 1024
IN_FEATURES = 39200
OUT_FEATURES = 256

VARIANTS = [
    dict(BATCH=513, IN_FEATURES=20000, OUT_FEATURES=1000),
    dict(BATCH=4096, IN_FEATURES=12545, OUT_FEATURES=129),
]
SMALL = dict(BATCH=16, IN_FEATURES=300, OUT_FEATURES=20)
SMALL_VARIANTS = [
    dict(BATCH=5, IN_FEATURES=129, OUT_FEATURES=7),
    dict(BATCH=21, IN_FEATURES=50, OUT_FEATURES=33),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, features):
        return torch.tanh(self.norm(self.fc(features)))


def get_inputs():
    # post-ReLU convolutional features are non-negative
    return [F.relu(torch.randn(BATCH, IN_FEATURES))]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
