"""Mamba-2 style gated group RMSNorm, RMSNorm_g(y * silu(u W_z^T)) * w: cuBLAS GEMM + ONE fused
Triton row kernel.

One program per token loads the GEMM output row and y as a [groups, group_size] register tile,
applies the SiLU gate, reduces the per-group sum of squares along the tile's second axis and writes
the normalised, weighted row in place over the GEMM output (our own temporary). PyTorch runs silu,
mul, pow, mean, add, rsqrt, mul, mul: eight kernels over the BATCH*SEQ x D_INNER activation.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gated_group_rmsnorm(z_ptr, y_ptr, w_ptr, n_cols, n_groups, group_size, eps,
                         BLOCK_G: tl.constexpr, BLOCK_S: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    g = tl.arange(0, BLOCK_G)
    j = tl.arange(0, BLOCK_S)
    cols = g[:, None] * group_size + j[None, :]
    m = (g < n_groups)[:, None] & (j < group_size)[None, :]
    base = row * n_cols
    z = tl.load(z_ptr + base + cols, mask=m, other=0.0)
    y = tl.load(y_ptr + base + cols, mask=m, other=0.0)
    h = y * (z * tl.sigmoid(z))
    ms = tl.sum(h * h, axis=1) / group_size
    inv = 1.0 / tl.sqrt(ms + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    tl.store(z_ptr + base + cols, h * inv[:, None] * w, mask=m)


class ModelNew(nn.Module):
    def __init__(self, d_model, d_inner, ngroups, eps):
        super().__init__()
        self.z_proj = nn.Linear(d_model, d_inner, bias=False)
        self.weight = nn.Parameter(torch.ones(d_inner))
        self.ngroups = ngroups
        self.eps = eps

    def forward(self, u, y):
        u2 = u.reshape(-1, u.shape[-1])
        z = torch.mm(u2, self.z_proj.weight.t())          # cuBLAS SGEMM, fresh buffer
        yc = y.contiguous()
        m, n = z.shape
        gs = n // self.ngroups
        BLOCK_G = triton.next_power_of_2(self.ngroups)
        BLOCK_S = triton.next_power_of_2(gs)
        tile = BLOCK_G * BLOCK_S
        num_warps = 16 if tile >= 8192 else (8 if tile >= 2048 else 4)
        _gated_group_rmsnorm[(m,)](z, yc, self.weight.contiguous(), n, self.ngroups, gs, float(self.eps),
                                   BLOCK_G=BLOCK_G, BLOCK_S=BLOCK_S, num_warps=num_warps)
        return z.view(*y.shape[:-1], n)
