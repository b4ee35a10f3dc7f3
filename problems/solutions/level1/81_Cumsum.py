"""Inclusive prefix sum along the last dimension (Triton), one program per row.

The row is walked in tiles of 4096: each tile is loaded once (coalesced), scanned in registers
with tl.cumsum (a parallel scan) in float64 and offset by a float64 running carry, so the result
is essentially exact (a parallel fp32 scan drifts by tens of ulps on long rows); every element is
read once and written once with no temporaries. The kernel stays memory-bound.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _cumsum_rows(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    carry = tl.zeros([1], dtype=tl.float64)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < n_cols
        v = tl.load(x_ptr + base + cols, mask=m, other=0.0)
        v64 = v.to(tl.float64)
        c = tl.cumsum(v64, axis=0) + carry
        tl.store(y_ptr + base + cols, c.to(tl.float32), mask=m)
        carry += tl.sum(v64, axis=0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.shape[-1]
        rows = x.numel() // n if n else 0
        if rows == 0:
            return y
        BLOCK = min(4096, max(64, triton.next_power_of_2(n)))
        _cumsum_rows[(rows,)](x, y, n, BLOCK=BLOCK, num_warps=8 if BLOCK >= 2048 else 4)
        return y
