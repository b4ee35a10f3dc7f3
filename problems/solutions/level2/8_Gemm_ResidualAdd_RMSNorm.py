"""Residual add + RMSNorm after an output projection: cuBLAS GEMM + ONE fused Triton row kernel.

One program per token row holds the whole (residual + GEMM output) row in registers, reduces the
sum of squares once and writes h * rsqrt(mean(h^2) + eps) * w in place over the GEMM output (our
own temporary). PyTorch's written-out version runs add, pow, mean, add, rsqrt, mul, mul: seven
kernels and several full passes over the BATCH*SEQ x DIM activation.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _residual_rmsnorm(h_ptr, r_ptr, w_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    base = row * n_cols
    h = tl.load(r_ptr + base + cols, mask=m, other=0.0) + tl.load(h_ptr + base + cols, mask=m, other=0.0)
    ms = tl.sum(h * h, axis=0) / n_cols
    inv = 1.0 / tl.sqrt(ms + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    tl.store(h_ptr + base + cols, h * inv * w, mask=m)


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.o_proj = nn.Linear(dim, dim, bias=False)
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, attn_out, residual):
        x2 = attn_out.reshape(-1, attn_out.shape[-1])
        h = torch.mm(x2, self.o_proj.weight.t())          # cuBLAS SGEMM, fresh buffer
        res = residual.contiguous()
        m, n = h.shape
        BLOCK = max(32, triton.next_power_of_2(n))
        num_warps = 16 if BLOCK >= 8192 else (8 if BLOCK >= 2048 else 4)
        _residual_rmsnorm[(m,)](h, res, self.weight.contiguous(), n, float(self.eps), BLOCK=BLOCK, num_warps=num_warps)
        return h.view(*attn_out.shape[:-1], n)
