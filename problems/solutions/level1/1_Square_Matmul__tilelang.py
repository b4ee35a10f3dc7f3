"""C = A @ B in fp32 on the CUDA cores (no TF32), in TileLang: each block computes a BLOCK_M x BLOCK_N
tile of C in a register fragment, stepping over K BLOCK_K at a time; T.copy brings A's and B's
slices into shared memory (pipelined over STAGES, the ragged edges zero-filled) and a parallel loop
over the tile accumulates them with fused multiply-adds. T.gemm is not used: on fp32 operands it
runs on the tensor cores in TF32, which the fp32 tolerance does not allow. One kernel for any M, N,
K (dynamic extents), compiled at import: the judge's build compiles it into TileLang's kernel cache,
which the run then loads.
"""
import torch
import torch.nn as nn

import tilelang
import tilelang.language as T

BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 16
THREADS = 256
STAGES = 2


def matmul_program():
    m, n, k = T.dynamic("m"), T.dynamic("n"), T.dynamic("k")

    @T.prim_func
    def matmul(A: T.Tensor((m, k), "float32"), B: T.Tensor((k, n), "float32"), C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, BLOCK_N), T.ceildiv(m, BLOCK_M), threads=THREADS) as (bx, by):
            A_shared = T.alloc_shared((BLOCK_M, BLOCK_K), "float32")
            B_shared = T.alloc_shared((BLOCK_K, BLOCK_N), "float32")
            C_local = T.alloc_fragment((BLOCK_M, BLOCK_N), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(k, BLOCK_K), num_stages=STAGES):
                T.copy(A[by * BLOCK_M, ko * BLOCK_K], A_shared, disable_tma=True)
                T.copy(B[ko * BLOCK_K, bx * BLOCK_N], B_shared, disable_tma=True)
                for kk in T.serial(BLOCK_K):
                    for i, j in T.Parallel(BLOCK_M, BLOCK_N):
                        C_local[i, j] += A_shared[i, kk] * B_shared[kk, j]
            T.copy(C_local, C[by * BLOCK_M, bx * BLOCK_N])

    return matmul


_matmul = tilelang.compile(matmul_program())


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        if a.dtype != torch.float32 or b.dtype != torch.float32:
            raise TypeError(f"this kernel is written for float32, not {a.dtype} and {b.dtype}")
        a, b = a.contiguous(), b.contiguous()
        c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
        if c.numel():
            _matmul(a, b, c)
        return c
