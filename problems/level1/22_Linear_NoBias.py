"""Fully connected layer without bias, y = x @ W^T, as an nn.Linear with bias=False."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "linear", "gemm"]

BATCH = 8192
IN_FEATURES = 2048
OUT_FEATURES = 5120

VARIANTS = [
    dict(BATCH=3001, IN_FEATURES=4097, OUT_FEATURES=2049),
    dict(BATCH=16384, IN_FEATURES=1000, OUT_FEATURES=1537),
]
SMALL = dict(BATCH=24, IN_FEATURES=96, OUT_FEATURES=80)
SMALL_VARIANTS = [
    dict(BATCH=27, IN_FEATURES=33, OUT_FEATURES=65),
    dict(BATCH=41, IN_FEATURES=129, OUT_FEATURES=17),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False)

    def forward(self, x):
        return self.linear(x)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
