"""BinaryNet-style MLP block: linear layer, BatchNorm1d with batch statistics, and hardtanh clipping to [-1, 1]."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "batchnorm", "hardtanh", "clamp"]

BATCH = 4096
IN_FEATURES = 4096
OUT_FEATURES = 4096

VARIANTS = [
    dict(BATCH=1000, IN_FEATURES=2049, OUT_FEATURES=3000),
    dict(BATCH=8191, IN_FEATURES=1024, OUT_FEATURES=1537),
]
SMALL = dict(BATCH=32, IN_FEATURES=64, OUT_FEATURES=48)
SMALL_VARIANTS = [
    dict(BATCH=9, IN_FEATURES=33, OUT_FEATURES=17),
    dict(BATCH=40, IN_FEATURES=20, OUT_FEATURES=65),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x):
        return F.hardtanh(self.bn(self.fc(x)), -1.0, 1.0)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
