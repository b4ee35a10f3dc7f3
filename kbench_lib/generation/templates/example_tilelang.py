import torch
import torch.nn as nn

import tilelang
import tilelang.language as T

BLOCK = 1024
THREADS = 256


def silu_add_program():
    n = T.dynamic("n")  # one kernel for any length

    @T.prim_func
    def silu_add(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), Out: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=THREADS) as bx:
            for i in T.Parallel(BLOCK):
                idx = bx * BLOCK + i
                if idx < n:
                    Out[idx] = X[idx] / (1.0 + T.exp(-X[idx])) + Y[idx]

    return silu_add


_silu_add = tilelang.compile(silu_add_program())  # compiled once, at import


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        shape = x.shape
        x, y = x.contiguous().view(-1), y.contiguous().view(-1)
        out = torch.empty_like(x)
        if out.numel():
            _silu_add(x, y, out)
        return out.view(shape)
