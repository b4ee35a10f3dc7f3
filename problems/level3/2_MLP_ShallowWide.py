"""A shallow, wide multilayer perceptron: one very wide GELU hidden layer between an input projection and a classifier."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["mlp", "linear", "gemm", "bias", "gelu"]

BATCH = 256
IN_FEATURES = 4096
HIDDEN = 12288
OUT_FEATURES = 1000

VARIANTS = [
    dict(BATCH=333, IN_FEATURES=3072, HIDDEN=10001, OUT_FEATURES=517),
    dict(BATCH=1024, IN_FEATURES=1537, HIDDEN=8192, OUT_FEATURES=2048),
]
SMALL = dict(BATCH=4, IN_FEATURES=64, HIDDEN=384, OUT_FEATURES=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_FEATURES=45, HIDDEN=257, OUT_FEATURES=13),
    dict(BATCH=7, IN_FEATURES=99, HIDDEN=511, OUT_FEATURES=5),
]


class Model(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, out_features)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, HIDDEN, OUT_FEATURES]
