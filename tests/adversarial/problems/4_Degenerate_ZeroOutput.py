"""DELIBERATELY DEGENERATE (threat #6): a linear layer with one output feature, minus its mean over
that size-1 dimension, is exactly zero for every input. An all-zero answer passes: the judge must
flag the task (``degenerate_task``). ``kbench lint`` rejects this file; it exists for the tests."""
import torch
import torch.nn as nn

TAGS = ["gemm", "mean", "subtract", "degenerate"]
BATCH = 8192
IN_F = 4096
VARIANTS = [dict(BATCH=777, IN_F=2049), dict(BATCH=3000, IN_F=1000)]
SMALL = dict(BATCH=64, IN_F=48)
SMALL_VARIANTS = [dict(BATCH=7, IN_F=33)]


class Model(nn.Module):
    def __init__(self, in_f):
        super().__init__()
        self.linear = nn.Linear(in_f, 1)

    def forward(self, x):
        y = self.linear(x)
        return y - y.mean(dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_F)]


def get_init_inputs():
    return [IN_F]
