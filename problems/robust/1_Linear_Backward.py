"""Fully connected layer y = x W^T + b; the output and the gradients of x, W and b are judged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["gemm", "linear", "bias"]

BATCH = 2048
IN_FEATURES = 4096
OUT_FEATURES = 3072

VARIANTS = [
    dict(BATCH=1000, IN_FEATURES=2753, OUT_FEATURES=5120),
    dict(BATCH=4099, IN_FEATURES=1024, OUT_FEATURES=1999),
]
SMALL = dict(BATCH=24, IN_FEATURES=96, OUT_FEATURES=80)
SMALL_VARIANTS = [
    dict(BATCH=7, IN_FEATURES=33, OUT_FEATURES=65),
    dict(BATCH=37, IN_FEATURES=130, OUT_FEATURES=17),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        with torch.no_grad():
            self.linear.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.linear(x)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
