"""Gated linear unit with residual, x + GLU(x W^T + b): cuBLAS GEMM + ONE fused Triton epilogue.

The epilogue reads the two halves of each GEMM output row (value and gate) in 2-D tiles, adds
their biases, computes value * sigmoid(gate), adds the residual x and writes the DIM-wide output
once. PyTorch runs addmm, then GLU (which reads the 2*DIM-wide activation and writes a temporary)
and the residual add (reads the temporary and x again).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _glu_residual(h_ptr, b_ptr, x_ptr, out_ptr, n_rows, dim, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cm = cols < dim
    mask = (rows < n_rows)[:, None] & cm[None, :]
    r64 = rows.to(tl.int64)[:, None]
    ba = tl.load(b_ptr + cols, mask=cm, other=0.0)
    bg = tl.load(b_ptr + dim + cols, mask=cm, other=0.0)
    a = tl.load(h_ptr + r64 * (2 * dim) + cols[None, :], mask=mask, other=0.0) + ba[None, :]
    g = tl.load(h_ptr + r64 * (2 * dim) + dim + cols[None, :], mask=mask, other=0.0) + bg[None, :]
    x = tl.load(x_ptr + r64 * dim + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + r64 * dim + cols[None, :], x + a * tl.sigmoid(g), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 2 * dim)

    def forward(self, x):
        x = x.contiguous()
        dim = x.shape[-1]
        x2 = x.view(-1, dim)
        h = torch.mm(x2, self.proj.weight.t())            # cuBLAS SGEMM (bias fused below)
        out = torch.empty_like(x2)
        m = x2.shape[0]
        BLOCK_M, BLOCK_N = 16, 256
        grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(dim, BLOCK_N))
        _glu_residual[grid](h, self.proj.bias.contiguous(), x2, out, m, dim, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4)
        return out.view(x.shape)
