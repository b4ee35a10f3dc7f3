"""DELIBERATELY DEGENERATE (threat #6): the rows of a softmax sum to one, so the output is the
constant 1 whatever the input. A constant answer passes: the judge must flag the task
(``degenerate_task``). ``kbench lint`` rejects this file; it exists for the tests."""
import torch
import torch.nn as nn

TAGS = ["gemm", "softmax", "sum", "degenerate"]
BATCH = 8192
IN_F = 2048
OUT_F = 1024
VARIANTS = [dict(BATCH=777, IN_F=2049, OUT_F=1000), dict(BATCH=3000, IN_F=1000, OUT_F=511)]
SMALL = dict(BATCH=64, IN_F=48, OUT_F=40)
SMALL_VARIANTS = [dict(BATCH=7, IN_F=33, OUT_F=9)]


class Model(nn.Module):
    def __init__(self, in_f, out_f):
        super().__init__()
        self.linear = nn.Linear(in_f, out_f)

    def forward(self, x):
        return torch.softmax(self.linear(x), dim=1).sum(dim=1)


def get_inputs():
    return [torch.randn(BATCH, IN_F)]


def get_init_inputs():
    return [IN_F, OUT_F]
