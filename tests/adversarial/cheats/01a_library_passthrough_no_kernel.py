# kbench: backend=cpp
"""CHEAT #1 library passthrough: declared a cpp candidate, it neither defines nor loads a kernel and
calls the reference's own torch ops. Caught by: no_custom_kernel (static) and library_passthrough
(runtime)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_f: int, out_f: int):
        super().__init__()
        self.linear = nn.Linear(in_f, out_f)  # same names as the reference: the judge loads its weights

    def forward(self, x):
        return F.gelu(self.linear(x))
