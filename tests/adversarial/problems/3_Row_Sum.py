"""x.sum(dim=-1): a reduction, for "a kernel whose summation order differs from PyTorch's"."""
import torch
import torch.nn as nn

TAGS = ["reduction", "sum"]
ROWS = 4096
COLS = 16384
VARIANTS = [dict(ROWS=1023, COLS=30001), dict(ROWS=32768, COLS=1999)]
SMALL = dict(ROWS=32, COLS=2048)
SMALL_VARIANTS = [dict(ROWS=7, COLS=1000), dict(ROWS=3, COLS=4097)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
