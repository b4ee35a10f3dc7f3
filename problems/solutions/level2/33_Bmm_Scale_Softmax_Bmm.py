"""bmm -> scale -> softmax -> bmm fused into one flash-attention kernel (Triton).

Each program owns a BLOCK_M tile of queries of one (batch, head) and streams K/V tiles through an
online softmax (running max and sum, rescaling the accumulator; exp2 with the scale and log2(e)
folded into one multiplier), so the SEQ x SEQ score matrix never touches memory. Products use
full-fp32 IEEE dots (no TF32). PyTorch materialises the scores, the scaled scores and the softmax
weights (three SEQ x SEQ tensors per head, written and read back) around two batched GEMMs.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _flash_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq, head_dim, qk_scale,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    base = bh * seq * head_dim
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < head_dim
    q = tl.load(q_ptr + base + offs_m[:, None] * head_dim + offs_d[None, :],
                mask=(offs_m < seq)[:, None] & d_ok[None, :], other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    for start in range(0, seq, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        n_ok = offs_n < seq
        kv_mask = n_ok[:, None] & d_ok[None, :]
        k = tl.load(k_ptr + base + offs_n[:, None] * head_dim + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * qk_scale     # log2-domain scores
        s = tl.where(n_ok[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + offs_n[:, None] * head_dim + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * head_dim + offs_d[None, :], out,
             mask=(offs_m < seq)[:, None] & d_ok[None, :])


def flash_attention(q, k, v):
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    *lead, seq, d = q.shape
    bh = q.numel() // (seq * d) if seq * d else 0
    o = torch.empty_like(q)
    if bh == 0 or seq == 0:
        return o
    BLOCK_D = max(16, triton.next_power_of_2(d))
    BLOCK_M = 64
    BLOCK_N = 64 if BLOCK_D <= 64 else 32
    num_warps = 4 if BLOCK_D <= 64 else 8
    qk_scale = (d ** -0.5) * 1.4426950408889634  # fold log2(e) for exp2
    grid = (triton.cdiv(seq, BLOCK_M), bh)
    _flash_fwd[grid](q, k, v, o, seq, d, qk_scale, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D,
                     num_warps=num_warps, num_stages=2)
    return o


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return flash_attention(q, k, v)
