"""Pre-norm cross-attention block (as in text-conditioned diffusion models): image tokens attend to a short sequence of context embeddings of another width, then a GELU MLP, each with a residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["attention", "cross_attention", "softmax", "layernorm", "gelu", "gemm", "bmm", "residual"]

BATCH = 8
NUM_QUERIES = 1024
D_MODEL = 640
NUM_HEADS = 10
CONTEXT_LEN = 77
CONTEXT_DIM = 768

VARIANTS = [
    dict(BATCH=4, NUM_QUERIES=4096, D_MODEL=320, NUM_HEADS=5, CONTEXT_LEN=77, CONTEXT_DIM=1024),
    dict(BATCH=13, NUM_QUERIES=255, D_MODEL=1280, NUM_HEADS=20, CONTEXT_LEN=300, CONTEXT_DIM=512),
]
SMALL = dict(BATCH=2, NUM_QUERIES=16, D_MODEL=32, NUM_HEADS=4, CONTEXT_LEN=7, CONTEXT_DIM=24)
SMALL_VARIANTS = [
    dict(BATCH=1, NUM_QUERIES=13, D_MODEL=30, NUM_HEADS=5, CONTEXT_LEN=9, CONTEXT_DIM=17),
    dict(BATCH=3, NUM_QUERIES=9, D_MODEL=18, NUM_HEADS=2, CONTEXT_LEN=5, CONTEXT_DIM=27),
]


class CrossAttention(nn.Module):
    def __init__(self, d_model, context_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.to_q = nn.Linear(d_model, d_model, bias=False)
        self.to_k = nn.Linear(context_dim, d_model, bias=False)
        self.to_v = nn.Linear(context_dim, d_model, bias=False)
        with torch.no_grad():  # trained-model-like attention sharpness: score std ~2 instead of ~0.3 at default init
            self.to_q.weight.mul_(2.5)
            self.to_k.weight.mul_(2.5)
        self.to_out = nn.Linear(d_model, d_model)

    def forward(self, x, context):
        b, n, d = x.shape
        m = context.shape[1]
        q = self.to_q(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.to_k(context).view(b, m, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.to_v(context).view(b, m, self.num_heads, self.head_dim).transpose(1, 2)
        attn = ((q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)).softmax(dim=-1)   # (b, h, n, m)
        y = (attn @ v).transpose(1, 2).reshape(b, n, d)
        return self.to_out(y)


class Model(nn.Module):
    def __init__(self, d_model, num_heads, context_dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = CrossAttention(d_model, context_dim, num_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff1 = nn.Linear(d_model, 4 * d_model)
        self.ff2 = nn.Linear(4 * d_model, d_model)

    def forward(self, x, context):
        # x: (batch, num_queries, d_model); context: (batch, context_len, context_dim)
        x = x + self.attn(self.norm1(x), context)
        x = x + self.ff2(F.gelu(self.ff1(self.norm2(x))))
        return x


def get_inputs():
    return [torch.randn(BATCH, NUM_QUERIES, D_MODEL), torch.randn(BATCH, CONTEXT_LEN, CONTEXT_DIM)]


def get_init_inputs():
    return [D_MODEL, NUM_HEADS, CONTEXT_DIM]
