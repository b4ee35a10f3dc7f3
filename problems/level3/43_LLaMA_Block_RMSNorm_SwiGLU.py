"""LLaMA-style decoder block: RMSNorm, causal multi-head attention with rotary embeddings, residual, RMSNorm, SwiGLU feed-forward, residual (no biases)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["transformer", "llama", "rmsnorm", "attention", "rope", "causal", "softmax", "swiglu", "silu", "gemm", "residual"]

BATCH = 2
SEQ_LEN = 1024
D_MODEL = 2048
NUM_HEADS = 16
FFN_DIM = 5632

VARIANTS = [
    dict(BATCH=1, SEQ_LEN=2047, D_MODEL=1536, NUM_HEADS=12, FFN_DIM=4096),
    dict(BATCH=7, SEQ_LEN=300, D_MODEL=2560, NUM_HEADS=20, FFN_DIM=6912),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, D_MODEL=32, NUM_HEADS=4, FFN_DIM=88)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=13, D_MODEL=24, NUM_HEADS=3, FFN_DIM=65),
    dict(BATCH=3, SEQ_LEN=9, D_MODEL=20, NUM_HEADS=2, FFN_DIM=53),
]


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    def __init__(self, d_model, num_heads, ffn_dim, rope_base=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.attention_norm = RMSNorm(d_model)
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, d_model, bias=False)
        self.wv = nn.Linear(d_model, d_model, bias=False)
        with torch.no_grad():  # trained-model-like attention sharpness: score std ~2 instead of ~0.3 at default init
            self.wq.weight.mul_(2.5)
            self.wk.weight.mul_(2.5)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.ffn_norm = RMSNorm(d_model)
        self.w1 = nn.Linear(d_model, ffn_dim, bias=False)
        self.w3 = nn.Linear(d_model, ffn_dim, bias=False)
        self.w2 = nn.Linear(ffn_dim, d_model, bias=False)
        inv_freq = 1.0 / (rope_base ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim))
        self.register_buffer("inv_freq", inv_freq)

    def attention(self, x):
        b, t, d = x.shape
        q = self.wq(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        freqs = torch.outer(torch.arange(t, device=x.device, dtype=torch.float32), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = (q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        attn = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        return self.wo((attn @ v).transpose(1, 2).reshape(b, t, d))

    def forward(self, x):
        h = x + self.attention(self.attention_norm(x))
        y = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(y)) * self.w3(y))


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, D_MODEL)]


def get_init_inputs():
    return [D_MODEL, NUM_HEADS, FFN_DIM]
