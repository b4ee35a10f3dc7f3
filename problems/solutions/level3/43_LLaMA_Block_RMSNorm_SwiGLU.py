"""LLaMA decoder block with its non-GEMM hot paths replaced by fused Triton kernels.

* RMSNorm: one program per token row, the row held in registers (PyTorch: pow, mean, add, rsqrt,
  mul, mul).
* Attention: one causal flash-attention kernel that reads q/k/v straight out of the projection
  outputs in (B, T, H, hd) layout (no view/transpose copies), applies the rotary embedding to the
  Q and K tiles as they are loaded (PyTorch: chunk, neg, cat, 4 muls, 2 adds for each of q and k),
  runs an online softmax over the causal key blocks only (blocks above the diagonal are skipped,
  the T x T scores and mask are never materialised) and writes the output already in (B, T, D)
  layout for the output projection. Dots are full-fp32 IEEE (no TF32).
* Residual adds are folded into cuBLAS addmm (C + A @ B) and SwiGLU's silu(g) * u is one fused
  elementwise pass.
The projections themselves stay on cuBLAS SGEMM.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_rows(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0)
    inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, x * inv * w, mask=m)


@triton.jit
def _silu_mul(g_ptr, u_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    g = tl.load(g_ptr + offs, mask=m, other=0.0)
    u = tl.load(u_ptr + offs, mask=m, other=0.0)
    tl.store(g_ptr + offs, g * tl.sigmoid(g) * u, mask=m)


@triton.jit
def _rope_tile(ptr, offs_t, offs_d, t_ok, d_ok, row_stride, head_dim, half, cos_ptr, sin_ptr):
    """Load a [BLOCK_T, BLOCK_D] tile and apply x * cos + rotate_half(x) * sin."""
    mask = t_ok[:, None] & d_ok[None, :]
    x = tl.load(ptr + offs_t[:, None] * row_stride + offs_d[None, :], mask=mask, other=0.0)
    partner = tl.where(offs_d < half, offs_d + half, offs_d - half)
    xp = tl.load(ptr + offs_t[:, None] * row_stride + partner[None, :], mask=mask, other=0.0)
    rot = tl.where((offs_d < half)[None, :], -xp, xp)
    c = tl.load(cos_ptr + offs_t[:, None] * head_dim + offs_d[None, :], mask=mask, other=0.0)
    s = tl.load(sin_ptr + offs_t[:, None] * head_dim + offs_d[None, :], mask=mask, other=0.0)
    return x * c + rot * s


@triton.jit
def _causal_rope_flash(q_ptr, k_ptr, v_ptr, o_ptr, cos_ptr, sin_ptr, seq, n_heads, head_dim, half,
                       row_stride, qk_scale,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // n_heads).to(tl.int64)
    h = (bh % n_heads).to(tl.int64)
    base = b * seq * row_stride + h * head_dim           # element (b, t=0, h, d=0)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < head_dim
    m_ok = offs_m < seq
    q = _rope_tile(q_ptr + base, offs_m, offs_d, m_ok, d_ok, row_stride, head_dim, half, cos_ptr, sin_ptr)
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    hi = tl.minimum(seq, (pid_m + 1) * BLOCK_M)          # causal: keys beyond the tile's last query are masked
    for start in range(0, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        n_ok = offs_n < seq
        k = _rope_tile(k_ptr + base, offs_n, offs_d, n_ok, d_ok, row_stride, head_dim, half, cos_ptr, sin_ptr)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * qk_scale
        keep = n_ok[None, :] & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + offs_n[:, None] * row_stride + offs_d[None, :],
                    mask=n_ok[:, None] & d_ok[None, :], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * row_stride + offs_d[None, :], out, mask=m_ok[:, None] & d_ok[None, :])


def _rmsnorm(x2, w, eps):
    rows, n = x2.shape
    y = torch.empty_like(x2)
    BLOCK = max(32, triton.next_power_of_2(n))
    _rmsnorm_rows[(rows,)](x2, w, y, n, eps, BLOCK=BLOCK, num_warps=16 if BLOCK >= 8192 else (8 if BLOCK >= 2048 else 4))
    return y


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))


class ModelNew(nn.Module):
    def __init__(self, d_model, num_heads, ffn_dim, rope_base=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.attention_norm = RMSNorm(d_model)
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, d_model, bias=False)
        self.wv = nn.Linear(d_model, d_model, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.ffn_norm = RMSNorm(d_model)
        self.w1 = nn.Linear(d_model, ffn_dim, bias=False)
        self.w3 = nn.Linear(d_model, ffn_dim, bias=False)
        self.w2 = nn.Linear(ffn_dim, d_model, bias=False)
        inv_freq = 1.0 / (rope_base ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, x):
        b, t, d = x.shape
        hd, nh = self.head_dim, self.num_heads
        x2 = x.reshape(b * t, d).contiguous()
        xn = _rmsnorm(x2, self.attention_norm.weight, self.attention_norm.eps)
        q = torch.mm(xn, self.wq.weight.t())              # (b*t, d) == (b, t, h, hd)
        k = torch.mm(xn, self.wk.weight.t())
        v = torch.mm(xn, self.wv.weight.t())
        # rotary tables exactly as the reference builds them (T x hd, tiny)
        freqs = torch.outer(torch.arange(t, device=x.device, dtype=torch.float32), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().contiguous(), emb.sin().contiguous()
        o = torch.empty_like(q)
        BLOCK_D = max(16, triton.next_power_of_2(hd))
        BLOCK_M = 64
        BLOCK_N = 64 if BLOCK_D <= 64 else 32
        qk_scale = (hd ** -0.5) * 1.4426950408889634
        grid = (triton.cdiv(t, BLOCK_M), b * nh)
        _causal_rope_flash[grid](q, k, v, o, cos, sin, t, nh, hd, hd // 2, d, qk_scale,
                                 BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D,
                                 num_warps=4 if BLOCK_D <= 64 else 8, num_stages=2)
        h = torch.addmm(x2, o, self.wo.weight.t())        # residual folded into the GEMM: x + o @ wo^T
        y = _rmsnorm(h, self.ffn_norm.weight, self.ffn_norm.eps)
        g = torch.mm(y, self.w1.weight.t())
        u = torch.mm(y, self.w3.weight.t())
        n = g.numel()
        _silu_mul[(triton.cdiv(n, 4096),)](g, u, n, BLOCK=4096, num_warps=8)
        out = torch.addmm(h, g, self.w2.weight.t())       # residual folded into the GEMM: h + a @ w2^T
        return out.view(b, t, d)
