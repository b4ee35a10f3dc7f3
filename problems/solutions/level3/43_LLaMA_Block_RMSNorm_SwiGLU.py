"""LLaMA decoder block with its non-GEMM hot paths replaced by fused Triton kernels.

* RMSNorm: one program per token row, the row held in registers (PyTorch: pow, mean, add, rsqrt,
  mul, mul).
* RoPE: one kernel per token rotates q and k (x * cos + rotate_half(x) * sin, partner element
  loaded directly) and scatters q, k, v from the projection layout (B, T, H, hd) into the
  attention layout (B, H, T, hd) in the same pass (PyTorch: view/transpose copies plus chunk, neg,
  cat, two muls and an add for each of q and k).
* Causal softmax: the two attention GEMMs stay on cuBLAS (fp32 flash attention on CUDA-core FMAs
  measured slower than cuBLAS SGEMM here); between them one kernel per score row applies the
  scale, reads only the causal prefix, and writes softmax probabilities with exact zeros above the
  diagonal, in place (PyTorch: scale multiply, ones/triu mask, masked_fill, softmax: three full
  read+write passes over B x H x T x T).
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
def _rope_to_heads(q_ptr, k_ptr, v_ptr, qo_ptr, ko_ptr, vo_ptr, cos_ptr, sin_ptr, seq, n_heads, head_dim, half,
                   BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr):
    """One token: rotate its q and k heads (x * cos + rotate_half(x) * sin) and scatter q, k, v
    from the projection layout (B, T, H, hd) into the attention layout (B, H, T, hd)."""
    tok = tl.program_id(0).to(tl.int64)
    b = tok // seq
    t = tok % seq
    hh = tl.arange(0, BLOCK_H)
    dd = tl.arange(0, BLOCK_D)
    mask = (hh < n_heads)[:, None] & (dd < head_dim)[None, :]
    src = tok * n_heads * head_dim + hh[:, None] * head_dim + dd[None, :]
    partner = tl.where(dd < half, dd + half, dd - half)
    psrc = tok * n_heads * head_dim + hh[:, None] * head_dim + partner[None, :]
    sign = tl.where(dd < half, -1.0, 1.0)
    c = tl.load(cos_ptr + t * head_dim + dd, mask=dd < head_dim, other=0.0)[None, :]
    s = tl.load(sin_ptr + t * head_dim + dd, mask=dd < head_dim, other=0.0)[None, :]
    dst = ((b * n_heads + hh[:, None]) * seq + t) * head_dim + dd[None, :]
    q = tl.load(q_ptr + src, mask=mask, other=0.0)
    qp = tl.load(q_ptr + psrc, mask=mask, other=0.0)
    tl.store(qo_ptr + dst, q * c + (sign[None, :] * qp) * s, mask=mask)
    k = tl.load(k_ptr + src, mask=mask, other=0.0)
    kp = tl.load(k_ptr + psrc, mask=mask, other=0.0)
    tl.store(ko_ptr + dst, k * c + (sign[None, :] * kp) * s, mask=mask)
    tl.store(vo_ptr + dst, tl.load(v_ptr + src, mask=mask, other=0.0), mask=mask)


@triton.jit
def _causal_scaled_softmax(s_ptr, seq, scale, BLOCK: tl.constexpr):
    """In place over one score row i: softmax(scores * scale) over columns <= i, exact zeros
    above the diagonal (which are never read)."""
    r = tl.program_id(0).to(tl.int64)
    i = r % seq
    cols = tl.arange(0, BLOCK)
    keep = cols <= i
    x = tl.load(s_ptr + r * seq + cols, mask=keep, other=0.0) * scale
    x = tl.where(keep, x, -float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    e = tl.where(keep, e, 0.0)
    tl.store(s_ptr + r * seq + cols, e / tl.sum(e, axis=0), mask=cols < seq)


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
        qh = torch.empty((b, nh, t, hd), device=x.device, dtype=x.dtype)
        kh = torch.empty_like(qh)
        vh = torch.empty_like(qh)
        _rope_to_heads[(b * t,)](q, k, v, qh, kh, vh, cos, sin, t, nh, hd, hd // 2,
                                 BLOCK_H=triton.next_power_of_2(nh), BLOCK_D=triton.next_power_of_2(hd), num_warps=4)
        scores = torch.matmul(qh, kh.transpose(-2, -1))    # cuBLAS batched SGEMM (b, h, t, t), fresh buffer
        BLOCK = max(32, triton.next_power_of_2(t))
        _causal_scaled_softmax[(b * nh * t,)](scores, t, hd ** -0.5, BLOCK=BLOCK,
                                              num_warps=16 if BLOCK >= 8192 else (8 if BLOCK >= 2048 else 4))
        o = torch.matmul(scores, vh).transpose(1, 2).reshape(b * t, d)
        h = torch.addmm(x2, o, self.wo.weight.t())        # residual folded into the GEMM: x + o @ wo^T
        y = _rmsnorm(h, self.ffn_norm.weight, self.ffn_norm.eps)
        g = torch.mm(y, self.w1.weight.t())
        u = torch.mm(y, self.w3.weight.t())
        n = g.numel()
        _silu_mul[(triton.cdiv(n, 4096),)](g, u, n, BLOCK=4096, num_warps=8)
        out = torch.addmm(h, g, self.w2.weight.t())       # residual folded into the GEMM: h + a @ w2^T
        return out.view(b, t, d)
