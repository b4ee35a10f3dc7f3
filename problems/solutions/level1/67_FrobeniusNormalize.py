"""x * sqrt(numel) / ||x||_F with two Triton kernels and no host synchronisation.

Kernel 1: a fixed grid of programs each accumulates a vector of partial sums of squares over a
strided set of tiles and writes one partial (deterministic, no atomics). Kernel 2: every program
reduces the (<= 1024) partials itself, forms the scale in registers and rescales its tiles.
PyTorch runs vector_norm, a 0-d division and a broadcast multiply (with a host-side scalar
expression); this is one read for the norm plus one read/write for the scale.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sumsq_partials(x_ptr, part_ptr, n, num_progs, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for it in range(ITERS):
        offs = (it * num_progs + pid).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x_ptr + offs, mask=m, other=0.0)
        acc += v * v
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def _scale(x_ptr, out_ptr, part_ptr, n, num_parts, sqrt_numel, num_progs,
           BLOCK: tl.constexpr, ITERS: tl.constexpr, PBLOCK: tl.constexpr):
    pid = tl.program_id(0)
    p = tl.load(part_ptr + tl.arange(0, PBLOCK), mask=tl.arange(0, PBLOCK) < num_parts, other=0.0)
    total = tl.sum(p, axis=0)
    s = sqrt_numel / tl.sqrt(total)
    for it in range(ITERS):
        offs = (it * num_progs + pid).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x_ptr + offs, mask=m, other=0.0)
        tl.store(out_ptr + offs, v * s, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        if n == 0:
            return out
        BLOCK = 4096
        tiles = triton.cdiv(n, BLOCK)
        progs = min(1024, tiles)
        iters = triton.cdiv(tiles, progs)
        parts = torch.empty(progs, device=x.device, dtype=torch.float32)
        _sumsq_partials[(progs,)](x, parts, n, progs, BLOCK=BLOCK, ITERS=iters, num_warps=8)
        sqrt_numel = float(n) ** 0.5
        _scale[(progs,)](x, out, parts, n, progs, sqrt_numel, progs, BLOCK=BLOCK, ITERS=iters,
                         PBLOCK=triton.next_power_of_2(progs), num_warps=8)
        return out
