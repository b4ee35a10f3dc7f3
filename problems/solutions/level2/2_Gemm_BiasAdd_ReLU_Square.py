"""Squared-ReLU MLP projection relu(x W^T + b)^2: cuBLAS GEMM + ONE fused Triton epilogue.

The epilogue kernel tiles the GEMM output in 2-D blocks (rows x columns, so the bias tile is
loaded once per block and broadcast), computes max(h + b, 0)^2 in registers and writes it back in
place over the GEMM output (our own temporary). PyTorch's eager graph runs the bias add, the ReLU
and the square as three separate full read+write passes over the BATCH*SEQ x OUT activation.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bias_relu_square(h_ptr, b_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cm = cols < n_cols
    mask = (rows < n_rows)[:, None] & cm[None, :]
    b = tl.load(b_ptr + cols, mask=cm, other=0.0)
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    h = tl.load(h_ptr + offs, mask=mask, other=0.0)
    r = tl.maximum(h + b[None, :], 0.0)
    tl.store(h_ptr + offs, r * r, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        h = torch.mm(x2, self.proj.weight.t())            # cuBLAS SGEMM, fresh buffer
        m, n = h.shape
        BLOCK_M, BLOCK_N = 16, 256
        grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))
        _bias_relu_square[grid](h, self.bias.contiguous(), m, n, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4)
        return h.view(*x.shape[:-1], n)
