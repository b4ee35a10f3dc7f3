"""ReLU in TileLang: the input flattened, each block a tile of BLOCK elements over THREADS threads
(TileLang spreads the tile's parallel loop over them: coalesced, several elements per thread), the
ragged last tile guarded. One kernel for any length (a dynamic extent), compiled at import: the
judge's build compiles it into TileLang's kernel cache, which the run then loads.
"""
import torch
import torch.nn as nn

import tilelang
import tilelang.language as T

BLOCK = 1024
THREADS = 256


def relu_program():
    n = T.dynamic("n")

    @T.prim_func
    def relu(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=THREADS) as bx:
            for i in T.Parallel(BLOCK):
                idx = bx * BLOCK + i
                if idx < n:
                    Y[idx] = T.max(X[idx], T.float32(0))

    return relu


_relu = tilelang.compile(relu_program())


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.dtype != torch.float32:
            raise TypeError(f"this kernel is written for float32, not {x.dtype}")
        flat = x.contiguous().view(-1)
        out = torch.empty_like(flat)
        if flat.numel():
            _relu(flat, out)
        return out.view(x.shape)
