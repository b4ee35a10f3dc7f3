"""Row-wise L2 normalisation x / max(||x||_2, eps) in one Triton kernel.

Rows up to 16384 floats are held entirely in registers: one read, one write, the norm reduced in
between. Longer rows use a sum-of-squares sweep followed by a scaling sweep. PyTorch's
F.normalize runs norm, clamp_min, expand_as and div (the input is read twice plus temporaries).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _l2norm_rows(x_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr, SINGLE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    if SINGLE:
        cols = tl.arange(0, BLOCK)
        m = cols < n_cols
        v = tl.load(x_ptr + base + cols, mask=m, other=0.0)
        nrm = tl.sqrt(tl.sum(v * v, axis=0))
        tl.store(y_ptr + base + cols, v / tl.maximum(nrm, eps), mask=m)
    else:
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            v = tl.load(x_ptr + base + cols, mask=cols < n_cols, other=0.0)
            acc += v * v
        den = tl.maximum(tl.sqrt(tl.sum(acc, axis=0)), eps)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            m = cols < n_cols
            v = tl.load(x_ptr + base + cols, mask=m, other=0.0)
            tl.store(y_ptr + base + cols, v / den, mask=m)


class ModelNew(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, n = x.shape
        if rows == 0 or n == 0:
            return y
        full = triton.next_power_of_2(n)
        single = full <= 16384
        BLOCK = max(32, full) if single else 4096
        num_warps = 16 if BLOCK >= 8192 else (8 if BLOCK >= 2048 else 4)
        _l2norm_rows[(rows,)](x, y, n, float(self.eps), BLOCK=BLOCK, SINGLE=single, num_warps=num_warps)
        return y
