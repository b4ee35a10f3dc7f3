"""GPT-2 pre-norm block with every non-GEMM op fused into Triton kernels; GEMMs stay on cuBLAS.

* LayerNorm + bias pass-through: one program per token row normalises the row from registers
  (exact two-pass mean/variance) and, in the same pass, writes the residual stream plus the bias of
  the projection that will be added to it, so the following cuBLAS addmm (C + A @ B) produces
  residual + proj(x) + bias in one GEMM (PyTorch: LayerNorm, addmm, and a separate residual add).
* Attention: one causal flash-attention kernel reads q, k and v directly out of the fused c_attn
  output (row stride 3*D, no split/view/transpose copies), skips key blocks above the diagonal,
  keeps an online softmax in registers (the T x T scores, the triu mask and the softmax are never
  materialised) and writes (B, T, D) directly. Dots are full-fp32 IEEE (no TF32).
* MLP: bias + tanh-GELU fused into one in-place pass over the c_fc GEMM output.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm_passthrough(x_ptr, w_ptr, b_ptr, extra_ptr, y_ptr, xb_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(m, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    b = tl.load(b_ptr + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, d * rstd * w + b, mask=m)
    e = tl.load(extra_ptr + cols, mask=m, other=0.0)
    tl.store(xb_ptr + row * n_cols + cols, x + e, mask=m)


@triton.jit
def _bias_gelu_tanh(h_ptr, b_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    cm = cols < n_cols
    mask = (rows < n_rows)[:, None] & cm[None, :]
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    x = tl.load(h_ptr + offs, mask=mask, other=0.0) + tl.load(b_ptr + cols, mask=cm, other=0.0)[None, :]
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    e = tl.exp(-2.0 * tl.abs(inner))
    th = (1.0 - e) / (1.0 + e)
    th = tl.where(inner < 0.0, -th, th)
    tl.store(h_ptr + offs, 0.5 * x * (1.0 + th), mask=mask)


@triton.jit
def _causal_flash_strided(q_ptr, k_ptr, v_ptr, o_ptr, seq, n_heads, head_dim, in_stride, out_stride, qk_scale,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // n_heads).to(tl.int64)
    h = (bh % n_heads).to(tl.int64)
    in_base = b * seq * in_stride + h * head_dim
    out_base = b * seq * out_stride + h * head_dim
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < head_dim
    m_ok = offs_m < seq
    q = tl.load(q_ptr + in_base + offs_m[:, None] * in_stride + offs_d[None, :], mask=m_ok[:, None] & d_ok[None, :], other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    hi = tl.minimum(seq, (pid_m + 1) * BLOCK_M)
    for start in range(0, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        n_ok = offs_n < seq
        kv_mask = n_ok[:, None] & d_ok[None, :]
        k = tl.load(k_ptr + in_base + offs_n[:, None] * in_stride + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * qk_scale
        keep = n_ok[None, :] & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + in_base + offs_n[:, None] * in_stride + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + out_base + offs_m[:, None] * out_stride + offs_d[None, :], out, mask=m_ok[:, None] & d_ok[None, :])


def _ln_passthrough(x2, norm, extra_bias):
    rows, n = x2.shape
    y = torch.empty_like(x2)
    xb = torch.empty_like(x2)
    BLOCK = max(32, triton.next_power_of_2(n))
    _layernorm_passthrough[(rows,)](x2, norm.weight, norm.bias, extra_bias, y, xb, n, float(norm.eps),
                                    BLOCK=BLOCK, num_warps=16 if BLOCK >= 8192 else (8 if BLOCK >= 2048 else 4))
    return y, xb


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)


class ModelNew(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, num_heads)
        self.ln_2 = nn.LayerNorm(d_model)
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.c_proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        nh, hd = self.attn.num_heads, self.attn.head_dim
        x2 = x.reshape(b * t, d).contiguous()
        a, xb = _ln_passthrough(x2, self.ln_1, self.attn.c_proj.bias)      # ln_1(x), x + b_proj
        qkv = torch.addmm(self.attn.c_attn.bias, a, self.attn.c_attn.weight.t())   # (b*t, 3d)
        o = torch.empty_like(x2)
        BLOCK_D = max(16, triton.next_power_of_2(hd))
        BLOCK_M = 64
        BLOCK_N = 64 if BLOCK_D <= 64 else 32
        qk_scale = (hd ** -0.5) * 1.4426950408889634
        grid = (triton.cdiv(t, BLOCK_M), b * nh)
        _causal_flash_strided[grid](qkv, qkv[:, d:], qkv[:, 2 * d:], o, t, nh, hd, 3 * d, d, qk_scale,
                                    BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D,
                                    num_warps=4 if BLOCK_D <= 64 else 8, num_stages=2)
        h = torch.addmm(xb, o, self.attn.c_proj.weight.t())                # x + attn(...)
        m2, hb = _ln_passthrough(h, self.ln_2, self.c_proj.bias)           # ln_2(h), h + b_proj
        f = torch.mm(m2, self.c_fc.weight.t())
        rows, n = f.shape
        _bias_gelu_tanh[(triton.cdiv(rows, 16), triton.cdiv(n, 256))](f, self.c_fc.bias, rows, n, BLOCK_M=16, BLOCK_N=256, num_warps=4)
        out = torch.addmm(hb, f, self.c_proj.weight.t())                   # h + mlp(...)
        return out.view(b, t, d)
