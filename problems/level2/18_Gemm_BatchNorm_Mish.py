"""Normalized MLP block: linear layer, BatchNorm1d with batch statistics, and Mish activation."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "batchnorm", "mish"]

BATCH = 2048
IN_FEATURES = 3072
OUT_FEATURES = 2048

VARIANTS = [
    dict(BATCH=777, IN_FEATURES=2000, OUT_FEATURES=4095),
    dict(BATCH=6001, IN_FEATURES=1024, OUT_FEATURES=1280),
]
SMALL = dict(BATCH=30, IN_FEATURES=40, OUT_FEATURES=56)
SMALL_VARIANTS = [
    dict(BATCH=7, IN_FEATURES=17, OUT_FEATURES=33),
    dict(BATCH=45, IN_FEATURES=64, OUT_FEATURES=11),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x):
        return F.mish(self.bn(self.fc(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
