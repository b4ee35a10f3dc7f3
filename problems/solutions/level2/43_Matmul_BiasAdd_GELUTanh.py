"""GPT-2 MLP up-projection gelu_tanh(x W + b): cuBLAS GEMM + ONE fused Triton epilogue.

The epilogue kernel walks the GEMM output in 2-D tiles (bias tile loaded once per block and
broadcast), computes the tanh-approximate GELU of h + b in registers (tanh via a numerically safe
exp formulation) and writes it back in place over the GEMM output (our own temporary). PyTorch
writes x @ W, reads it back for + bias (writing another temporary) and reads that again for GELU.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bias_gelu_tanh(h_ptr, b_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cm = cols < n_cols
    mask = (rows < n_rows)[:, None] & cm[None, :]
    b = tl.load(b_ptr + cols, mask=cm, other=0.0)
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    x = tl.load(h_ptr + offs, mask=mask, other=0.0) + b[None, :]
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    # tanh(t) = sign(t) * (1 - e) / (1 + e) with e = exp(-2|t|): no overflow, accurate near 0 in fp32
    e = tl.exp(-2.0 * tl.abs(inner))
    th = (1.0 - e) / (1.0 + e)
    th = tl.where(inner < 0.0, -th, th)
    tl.store(h_ptr + offs, 0.5 * x * (1.0 + th), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, embed, inner):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(embed, inner) * 0.02)
        self.bias = nn.Parameter(torch.randn(inner) * 0.02)

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        h = torch.mm(x2, self.weight)                     # cuBLAS SGEMM, fresh buffer
        m, n = h.shape
        BLOCK_M, BLOCK_N = 16, 256
        grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))
        _bias_gelu_tanh[grid](h, self.bias.contiguous(), m, n, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4)
        return h.view(*x.shape[:-1], n)
