"""Primer-style squared-ReLU feed-forward activation: a bias-free token projection, a separate bias add, ReLU, and squaring."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "relu", "square"]

BATCH = 8
SEQ_LEN = 1024
IN_FEATURES = 1024
OUT_FEATURES = 4096

VARIANTS = [
    dict(BATCH=3, SEQ_LEN=1999, IN_FEATURES=1280, OUT_FEATURES=5120),
    dict(BATCH=16, SEQ_LEN=515, IN_FEATURES=768, OUT_FEATURES=3071),
]
SMALL = dict(BATCH=2, SEQ_LEN=24, IN_FEATURES=64, OUT_FEATURES=96)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=37, IN_FEATURES=33, OUT_FEATURES=65),
    dict(BATCH=3, SEQ_LEN=11, IN_FEATURES=80, OUT_FEATURES=47),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        h = self.proj(x) + self.bias
        return F.relu(h).square()


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
