"""gelu(x @ W^T + b): a GEMM with an epilogue, for "library GEMM + fused epilogue" and weight preparation."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "gelu"]
BATCH = 1024
IN_F = 4096
OUT_F = 3072
VARIANTS = [dict(BATCH=777, IN_F=2049, OUT_F=1000), dict(BATCH=2048, IN_F=1000, OUT_F=1536)]
SMALL = dict(BATCH=16, IN_F=32, OUT_F=24)
SMALL_VARIANTS = [dict(BATCH=5, IN_F=17, OUT_F=9), dict(BATCH=33, IN_F=64, OUT_F=40)]


class Model(nn.Module):
    def __init__(self, in_f, out_f):
        super().__init__()
        self.linear = nn.Linear(in_f, out_f)

    def forward(self, x):
        return F.gelu(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, IN_F)]


def get_init_inputs():
    return [IN_F, OUT_F]
