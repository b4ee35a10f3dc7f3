"""StyleGAN mapping-network layer with equalized learning rate: bias-free matmul scaled by lr_mul / sqrt(fan_in), bias scaled by lr_mul, leaky ReLU(0.2), and a sqrt(2) gain."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "scale", "bias", "leaky_relu"]

BATCH = 16384
IN_FEATURES = 2048
OUT_FEATURES = 2048
LR_MUL = 0.01

VARIANTS = [
    dict(BATCH=32767, IN_FEATURES=512, OUT_FEATURES=768),
    dict(BATCH=4099, IN_FEATURES=3000, OUT_FEATURES=1500),
]
SMALL = dict(BATCH=32, IN_FEATURES=40, OUT_FEATURES=48)
SMALL_VARIANTS = [
    dict(BATCH=9, IN_FEATURES=33, OUT_FEATURES=17),
    dict(BATCH=51, IN_FEATURES=16, OUT_FEATURES=64),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features, lr_mul):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / lr_mul)
        self.bias = nn.Parameter(torch.randn(out_features) * (0.2 / lr_mul))
        self.weight_gain = lr_mul / math.sqrt(in_features)
        self.lr_mul = lr_mul

    def forward(self, w):
        x = F.linear(w, self.weight) * self.weight_gain + self.bias * self.lr_mul
        return F.leaky_relu(x, 0.2) * math.sqrt(2.0)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, LR_MUL]
