"""GPT-2 style pre-norm transformer block: LayerNorm, causal multi-head self-attention, residual, LayerNorm, tanh-GELU MLP, residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["transformer", "attention", "causal", "softmax", "layernorm", "gelu", "gemm", "residual"]

BATCH = 8
SEQ_LEN = 1024
D_MODEL = 1024
NUM_HEADS = 16

VARIANTS = [
    dict(BATCH=3, SEQ_LEN=2047, D_MODEL=768, NUM_HEADS=12),
    dict(BATCH=21, SEQ_LEN=333, D_MODEL=1280, NUM_HEADS=20),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, D_MODEL=32, NUM_HEADS=4)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=11, D_MODEL=18, NUM_HEADS=3),
    dict(BATCH=1, SEQ_LEN=13, D_MODEL=30, NUM_HEADS=5),
]


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        with torch.no_grad():  # trained-model-like attention sharpness: score std ~2 instead of ~0.3 at default init
            self.c_attn.weight[: 2 * d_model].mul_(2.5)
        self.c_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q = q.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(future, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.c_proj(y)


class Model(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, num_heads)
        self.ln_2 = nn.LayerNorm(d_model)
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.c_proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
        return x


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, D_MODEL)]


def get_init_inputs():
    return [D_MODEL, NUM_HEADS]
