"""Perceiver encoder: a learned latent array cross-attends to a long input array of another width, then refines itself with pre-norm latent self-attention blocks; returns the latents."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["attention", "perceiver", "cross_attention", "self_attention", "softmax", "layernorm", "gelu", "gemm", "residual"]

BATCH = 16
INPUT_LEN = 2048
INPUT_DIM = 256
NUM_LATENTS = 256
LATENT_DIM = 512
NUM_HEADS = 8
NUM_SELF_LAYERS = 2

VARIANTS = [
    dict(BATCH=4, INPUT_LEN=9999, INPUT_DIM=128, NUM_LATENTS=512, LATENT_DIM=384, NUM_HEADS=6, NUM_SELF_LAYERS=2),
    dict(BATCH=33, INPUT_LEN=777, INPUT_DIM=300, NUM_LATENTS=129, LATENT_DIM=640, NUM_HEADS=10, NUM_SELF_LAYERS=3),
]
SMALL = dict(BATCH=2, INPUT_LEN=16, INPUT_DIM=12, NUM_LATENTS=8, LATENT_DIM=24, NUM_HEADS=2, NUM_SELF_LAYERS=2)
SMALL_VARIANTS = [
    dict(BATCH=1, INPUT_LEN=15, INPUT_DIM=7, NUM_LATENTS=5, LATENT_DIM=18, NUM_HEADS=3, NUM_SELF_LAYERS=1),
    dict(BATCH=3, INPUT_LEN=13, INPUT_DIM=9, NUM_LATENTS=6, LATENT_DIM=20, NUM_HEADS=4, NUM_SELF_LAYERS=2),
]


class Attention(nn.Module):
    def __init__(self, q_dim, kv_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = q_dim // num_heads
        self.to_q = nn.Linear(q_dim, q_dim, bias=False)
        self.to_kv = nn.Linear(kv_dim, 2 * q_dim, bias=False)
        with torch.no_grad():  # trained-model-like attention sharpness: score std ~2 instead of ~0.3 at default init
            self.to_q.weight.mul_(2.5)
            self.to_kv.weight[:q_dim].mul_(2.5)
        self.to_out = nn.Linear(q_dim, q_dim)

    def forward(self, x, context):
        b, n, d = x.shape
        m = context.shape[1]
        q = self.to_q(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        k, v = self.to_kv(context).view(b, m, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        attn = ((q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)).softmax(dim=-1)
        return self.to_out((attn @ v).transpose(1, 2).reshape(b, n, d))


class FeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(self.norm(x))))


class SelfBlock(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = Attention(dim, dim, num_heads)
        self.ff = FeedForward(dim)

    def forward(self, x):
        y = self.norm(x)
        x = x + self.attn(y, y)
        return x + self.ff(x)


class Model(nn.Module):
    def __init__(self, input_dim, num_latents, latent_dim, num_heads, num_self_layers):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(num_latents, latent_dim))
        self.norm_latents = nn.LayerNorm(latent_dim)
        self.norm_inputs = nn.LayerNorm(input_dim)
        self.cross_attn = Attention(latent_dim, input_dim, num_heads)
        self.cross_ff = FeedForward(latent_dim)
        self.self_blocks = nn.ModuleList([SelfBlock(latent_dim, num_heads) for _ in range(num_self_layers)])

    def forward(self, inputs):
        # inputs: (batch, input_len, input_dim) -> latents (batch, num_latents, latent_dim)
        z = self.latents.unsqueeze(0).expand(inputs.shape[0], -1, -1)
        z = z + self.cross_attn(self.norm_latents(z), self.norm_inputs(inputs))
        z = z + self.cross_ff(z)
        for block in self.self_blocks:
            z = block(z)
        return z


def get_inputs():
    return [torch.randn(BATCH, INPUT_LEN, INPUT_DIM)]


def get_init_inputs():
    return [INPUT_DIM, NUM_LATENTS, LATENT_DIM, NUM_HEADS, NUM_SELF_LAYERS]
