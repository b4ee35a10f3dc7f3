"""C = A @ B in fp32 on the CUDA cores (no TF32), in NVIDIA's CuTe DSL: a classic shared-memory tiled
SIMT GEMM. Each block computes a BLOCK_M x BLOCK_N tile of C, stepping over K BLOCK_K at a time:
the block copies its slices of A (transposed, padded against bank conflicts) and B into shared
memory, bounds-checked and zero-filled at the ragged edges, then each of its 16 x 16 threads
accumulates a TM x TN patch of C in registers (rows and columns 16 apart, so the stores coalesce).
Any M, N, K (dynamic extents), compiled once at import.
"""
import cuda.bindings.driver as cuda
import torch
import torch.nn as nn

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor

BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 8
THREADS = 16 * 16  # a 16 x 16 grid of threads over the tile
TM = BLOCK_M // 16
TN = BLOCK_N // 16
PAD = 4  # sA's rows padded: the transposed stores from one warp fall in distinct banks
assert BLOCK_M % 16 == 0 and BLOCK_N % 16 == 0, "tiles are split over 16 x 16 threads"
assert (BLOCK_M * BLOCK_K) % THREADS == 0 and (BLOCK_K * BLOCK_N) % THREADS == 0, "each thread copies whole elements"


@cute.kernel
def gemm_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bx, by, _ = cute.arch.block_idx()
    M = mA.shape[0]
    K = mA.shape[1]
    N = mB.shape[1]
    ty = tidx // 16
    tx = tidx % 16
    row0 = by * BLOCK_M
    col0 = bx * BLOCK_N

    smem = cutlass.utils.SmemAllocator()
    sA = smem.allocate_tensor(cutlass.Float32, cute.make_layout((BLOCK_K, BLOCK_M), stride=(BLOCK_M + PAD, 1)), byte_alignment=16)
    sB = smem.allocate_tensor(cutlass.Float32, cute.make_layout((BLOCK_K, BLOCK_N), stride=(BLOCK_N, 1)), byte_alignment=16)
    acc = cute.make_rmem_tensor(cute.make_layout((TM, TN)), cutlass.Float32)
    acc.fill(0.0)
    a = cute.make_rmem_tensor(cute.make_layout(TM), cutlass.Float32)
    b = cute.make_rmem_tensor(cute.make_layout(TN), cutlass.Float32)

    for k0 in cutlass.range(0, K, BLOCK_K):
        # A's BLOCK_M x BLOCK_K slice, THREADS elements at a time, stored transposed: sA[k, m]
        for step in cutlass.range_constexpr(BLOCK_M * BLOCK_K // THREADS):
            e = tidx + step * THREADS
            r = e // BLOCK_K
            c = e % BLOCK_K
            val = cutlass.Float32(0.0)
            if row0 + r < M and k0 + c < K:
                val = mA[row0 + r, k0 + c]
            sA[c, r] = val
        # B's BLOCK_K x BLOCK_N slice: sB[k, n]
        for step in cutlass.range_constexpr(BLOCK_K * BLOCK_N // THREADS):
            e = tidx + step * THREADS
            r = e // BLOCK_N
            c = e % BLOCK_N
            val = cutlass.Float32(0.0)
            if k0 + r < K and col0 + c < N:
                val = mB[k0 + r, col0 + c]
            sB[r, c] = val
        cute.arch.sync_threads()
        for kk in cutlass.range_constexpr(BLOCK_K):
            for i in cutlass.range_constexpr(TM):
                a[i] = sA[kk, ty + 16 * i]
            for j in cutlass.range_constexpr(TN):
                b[j] = sB[kk, tx + 16 * j]
            for i in cutlass.range_constexpr(TM):
                for j in cutlass.range_constexpr(TN):
                    acc[i, j] = acc[i, j] + a[i] * b[j]
        cute.arch.sync_threads()  # the slices are read by every thread before the next step overwrites them

    for i in cutlass.range_constexpr(TM):
        for j in cutlass.range_constexpr(TN):
            r = row0 + ty + 16 * i
            c = col0 + tx + 16 * j
            if r < M and c < N:
                mC[r, c] = acc[i, j]


@cute.jit
def gemm(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream: cuda.CUstream):
    grid_n = (mB.shape[1] + BLOCK_N - 1) // BLOCK_N
    grid_m = (mA.shape[0] + BLOCK_M - 1) // BLOCK_M
    gemm_kernel(mA, mB, mC).launch(grid=[grid_n, grid_m, 1], block=[THREADS, 1, 1], stream=stream)


def _compile():
    m, n, k = cute.sym_int(), cute.sym_int(), cute.sym_int()
    a = make_fake_compact_tensor(cutlass.Float32, (m, k), stride_order=(1, 0), assumed_align=16)
    b = make_fake_compact_tensor(cutlass.Float32, (k, n), stride_order=(1, 0), assumed_align=16)
    c = make_fake_compact_tensor(cutlass.Float32, (m, n), stride_order=(1, 0), assumed_align=16)
    return cute.compile(gemm, a, b, c, cuda.CUstream(0))


_gemm = _compile()


def _cute(t: torch.Tensor):
    return from_dlpack(t, assumed_align=16).mark_layout_dynamic()


def _aligned(t: torch.Tensor) -> torch.Tensor:
    t = t.contiguous()
    return t.clone() if t.data_ptr() % 16 else t


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        if a.dtype != torch.float32 or b.dtype != torch.float32:
            raise TypeError(f"this kernel is written for float32, not {a.dtype} and {b.dtype}")
        a, b = _aligned(a), _aligned(b)
        c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
        if c.numel():
            _gemm(_cute(a), _cute(b), _cute(c), cuda.CUstream(torch.cuda.current_stream().cuda_stream))
        return c
