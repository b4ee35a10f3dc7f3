"""bmm -> scale -> softmax -> bmm: cuBLAS SGEMMs + ONE fused Triton kernel for the scale and the
softmax.

In fp32 without TF32 a flash-attention kernel has to run its dots on CUDA-core FMAs, which on an
H100 loses to cuBLAS SGEMM by more than the score traffic it saves (measured: 0.7x of eager), so the
two GEMMs stay on cuBLAS and everything between them is fused: one program per score row loads the
row into registers, multiplies by d^-0.5, subtracts the row max, exponentiates once, normalises and
writes the probabilities back in place over the GEMM output (our own temporary). PyTorch runs the
scale multiply and the softmax as two full read+write passes over the BATCH x HEADS x SEQ x SEQ scores;
this is one.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scaled_softmax_rows(s_ptr, n_cols, scale, BLOCK: tl.constexpr, SINGLE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    if SINGLE:
        cols = tl.arange(0, BLOCK)
        m = cols < n_cols
        x = tl.load(s_ptr + base + cols, mask=m, other=-float("inf")) * scale
        e = tl.exp(x - tl.max(x, axis=0))
        e = tl.where(m, e, 0.0)
        tl.store(s_ptr + base + cols, e / tl.sum(e, axis=0), mask=m)
    else:
        m_vec = tl.full([BLOCK], -3.0e38, dtype=tl.float32)
        s_vec = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(s_ptr + base + cols, mask=cols < n_cols, other=-float("inf")) * scale
            new_m = tl.maximum(m_vec, x)
            s_vec = s_vec * tl.exp(m_vec - new_m) + tl.exp(x - new_m)
            m_vec = new_m
        mx = tl.max(m_vec, axis=0)
        total = tl.sum(s_vec * tl.exp(m_vec - mx), axis=0)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            m = cols < n_cols
            x = tl.load(s_ptr + base + cols, mask=m, other=0.0) * scale
            tl.store(s_ptr + base + cols, tl.exp(x - mx) / total, mask=m)


def scaled_softmax_(scores, scale):
    n = scores.shape[-1]
    rows = scores.numel() // n if n else 0
    if rows == 0:
        return scores
    full = triton.next_power_of_2(n)
    single = full <= 8192
    BLOCK = max(32, full) if single else 2048
    num_warps = 16 if BLOCK >= 8192 else (8 if BLOCK >= 2048 else 4)
    _scaled_softmax_rows[(rows,)](scores, n, scale, BLOCK=BLOCK, SINGLE=single, num_warps=num_warps)
    return scores


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)).contiguous()   # cuBLAS batched SGEMM, fresh buffer
        scaled_softmax_(scores, float(q.shape[-1] ** -0.5))
        return torch.matmul(scores, v)
