"""Transformer-style up-projection: a biased linear layer, exact GELU, and LayerNorm over the projected features."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "gelu", "layernorm"]

BATCH = 2048
IN_FEATURES = 4096
OUT_FEATURES = 4096
EPS = 1e-5

VARIANTS = [
    dict(BATCH=1000, IN_FEATURES=3072, OUT_FEATURES=4095),
    dict(BATCH=4099, IN_FEATURES=1536, OUT_FEATURES=2304),
]
SMALL = dict(BATCH=24, IN_FEATURES=96, OUT_FEATURES=80)
SMALL_VARIANTS = [
    dict(BATCH=7, IN_FEATURES=33, OUT_FEATURES=65),
    dict(BATCH=40, IN_FEATURES=130, OUT_FEATURES=17),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features, eps):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features, eps=eps)

    def forward(self, x):
        return self.norm(F.gelu(self.linear(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, EPS]
