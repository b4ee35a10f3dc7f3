"""GPT-2 MLP expansion written as its Conv1D: token states times a (in, out) weight matrix, bias add, and the tanh-approximate GELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "bias", "gelu"]

BATCH = 8
SEQ_LEN = 1024
EMBED = 1600
INNER = 6400

VARIANTS = [
    dict(BATCH=3, SEQ_LEN=1023, EMBED=768, INNER=3072),
    dict(BATCH=16, SEQ_LEN=333, EMBED=1280, INNER=5120),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, EMBED=32, INNER=128)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=21, EMBED=17, INNER=68),
    dict(BATCH=3, SEQ_LEN=7, EMBED=48, INNER=33),
]


class Model(nn.Module):
    def __init__(self, embed, inner):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(embed, inner) * 0.02)
        self.bias = nn.Parameter(torch.randn(inner) * 0.02)

    def forward(self, x):
        h = torch.matmul(x, self.weight) + self.bias
        return F.gelu(h, approximate="tanh")


def get_inputs():
    # layer-normalized residual stream scaled by a trained ln_2 gain
    return [torch.randn(BATCH, SEQ_LEN, EMBED) * 4.0]


def get_init_inputs():
    return [EMBED, INNER]
