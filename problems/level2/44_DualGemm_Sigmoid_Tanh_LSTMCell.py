"""LSTM cell step: input and hidden projections summed, split into four gates, sigmoid and tanh activations, cell update c' = f * c + i * g, and h' = o * tanh(c'), returned stacked as (h', c')."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "add", "chunk", "sigmoid", "tanh", "mul", "lstm"]

BATCH = 1024
INPUT_SIZE = 2048
HIDDEN_SIZE = 2048

VARIANTS = [
    dict(BATCH=333, INPUT_SIZE=1024, HIDDEN_SIZE=1500),
    dict(BATCH=4096, INPUT_SIZE=512, HIDDEN_SIZE=1024),
]
SMALL = dict(BATCH=16, INPUT_SIZE=24, HIDDEN_SIZE=20)
SMALL_VARIANTS = [
    dict(BATCH=5, INPUT_SIZE=13, HIDDEN_SIZE=17),
    dict(BATCH=27, INPUT_SIZE=8, HIDDEN_SIZE=6),
]


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.ih = nn.Linear(input_size, 4 * hidden_size)
        self.hh = nn.Linear(hidden_size, 4 * hidden_size)

    def forward(self, x, h, c):
        gates = self.ih(x) + self.hh(h)
        i, f, g, o = gates.chunk(4, dim=1)
        c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h_new = torch.sigmoid(o) * torch.tanh(c_new)
        return torch.stack((h_new, c_new))


def get_inputs():
    x = torch.randn(BATCH, INPUT_SIZE) * 2.0
    h = torch.tanh(torch.randn(BATCH, HIDDEN_SIZE))
    c = torch.randn(BATCH, HIDDEN_SIZE)
    return [x, h, c]


def get_init_inputs():
    return [INPUT_SIZE, HIDDEN_SIZE]
