"""GRU cell step: input and hidden projections, reset and update gates by sigmoid, candidate tanh(W_in x + b_in + r * (W_hn h + b_hn)), and interpolation h' = (1 - z) * n + z * h."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "add", "chunk", "sigmoid", "tanh", "mul", "gru"]

BATCH = 2048
INPUT_SIZE = 1024
HIDDEN_SIZE = 2048

VARIANTS = [
    dict(BATCH=511, INPUT_SIZE=2048, HIDDEN_SIZE=1000),
    dict(BATCH=8191, INPUT_SIZE=256, HIDDEN_SIZE=768),
]
SMALL = dict(BATCH=16, INPUT_SIZE=20, HIDDEN_SIZE=24)
SMALL_VARIANTS = [
    dict(BATCH=7, INPUT_SIZE=9, HIDDEN_SIZE=13),
    dict(BATCH=30, INPUT_SIZE=33, HIDDEN_SIZE=5),
]


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.ih = nn.Linear(input_size, 3 * hidden_size)
        self.hh = nn.Linear(hidden_size, 3 * hidden_size)

    def forward(self, x, h):
        xr, xz, xn = self.ih(x).chunk(3, dim=1)
        hr, hz, hn = self.hh(h).chunk(3, dim=1)
        r = torch.sigmoid(xr + hr)
        z = torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        return (1.0 - z) * n + z * h


def get_inputs():
    x = torch.randn(BATCH, INPUT_SIZE) * 2.0
    h = torch.tanh(torch.randn(BATCH, HIDDEN_SIZE) * 2.0)
    return [x, h]


def get_init_inputs():
    return [INPUT_SIZE, HIDDEN_SIZE]
