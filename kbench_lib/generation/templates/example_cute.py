import cuda.bindings.driver as cuda
import torch
import torch.nn as nn

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor

THREADS = 256
VALUES = 4  # elements per thread, each THREADS apart: every load and store coalesced


@cute.kernel
def silu_add_kernel(gX: cute.Tensor, gY: cute.Tensor, gOut: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    n = cute.size(gX)
    base = bidx * (THREADS * VALUES) + tidx
    for v in cutlass.range_constexpr(VALUES):
        i = base + v * THREADS
        if i < n:
            x = gX[i]
            gOut[i] = x / (cutlass.Float32(1.0) + cute.math.exp(-x)) + gY[i]


@cute.jit
def silu_add(mX: cute.Tensor, mY: cute.Tensor, mOut: cute.Tensor, stream: cuda.CUstream):
    n = cute.size(mX)
    tile = THREADS * VALUES
    silu_add_kernel(mX, mY, mOut).launch(grid=[(n + tile - 1) // tile, 1, 1], block=[THREADS, 1, 1], stream=stream)


def _compile():
    # compiled once, at import, for any length: a dynamic extent on fake tensors
    n = cute.sym_int()
    fake = [make_fake_compact_tensor(cutlass.Float32, (n,), assumed_align=16) for _ in range(3)]
    return cute.compile(silu_add, *fake, cuda.CUstream(0))


_silu_add = _compile()


def _cute(t: torch.Tensor):
    return from_dlpack(t, assumed_align=16).mark_layout_dynamic()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        shape = x.shape
        x, y = x.contiguous().view(-1), y.contiguous().view(-1)
        out = torch.empty_like(x)
        if out.numel():
            stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
            _silu_add(_cute(x), _cute(y), _cute(out), stream)
        return out.view(shape)
