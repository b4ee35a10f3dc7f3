"""Swin transformer block with shifted windows: LayerNorm, cyclic shift, windowed multi-head attention with a learned relative position bias and shift mask, reverse shift, residual, then a GELU MLP with residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["attention", "window_attention", "swin", "relative_position_bias", "roll", "mask", "softmax", "layernorm", "gelu", "gemm", "residual"]

BATCH = 64
HEIGHT = 56
WIDTH = 56
DIM = 96
NUM_HEADS = 3
WINDOW_SIZE = 7
SHIFT_SIZE = 3

VARIANTS = [
    dict(BATCH=32, HEIGHT=28, WIDTH=28, DIM=192, NUM_HEADS=6, WINDOW_SIZE=7, SHIFT_SIZE=3),
    dict(BATCH=11, HEIGHT=35, WIDTH=45, DIM=160, NUM_HEADS=5, WINDOW_SIZE=5, SHIFT_SIZE=2),
]
SMALL = dict(BATCH=1, HEIGHT=8, WIDTH=8, DIM=16, NUM_HEADS=2, WINDOW_SIZE=4, SHIFT_SIZE=2)
SMALL_VARIANTS = [
    dict(BATCH=2, HEIGHT=6, WIDTH=9, DIM=18, NUM_HEADS=3, WINDOW_SIZE=3, SHIFT_SIZE=1),
    dict(BATCH=1, HEIGHT=10, WIDTH=5, DIM=20, NUM_HEADS=2, WINDOW_SIZE=5, SHIFT_SIZE=2),
]


def window_partition(x, ws):
    b, h, w, c = x.shape
    x = x.view(b, h // ws, ws, w // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, ws * ws, c)                       # (b * num_windows, ws*ws, c)


def window_reverse(windows, ws, b, h, w):
    c = windows.shape[-1]
    x = windows.view(b, h // ws, w // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(b, h, w, c)


class Model(nn.Module):
    def __init__(self, height, width, dim, num_heads, window_size, shift_size):
        super().__init__()
        self.h, self.w = height, width
        self.ws, self.shift = window_size, shift_size
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        with torch.no_grad():  # trained-model-like attention sharpness: score std ~2 instead of ~0.3 at default init
            self.qkv.weight[: 2 * dim].mul_(2.5)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

        ws = window_size
        # learned bias per (relative dy, relative dx) pair and head (magnitude of a trained table)
        self.rel_bias_table = nn.Parameter(torch.randn((2 * ws - 1) * (2 * ws - 1), num_heads))
        coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
        rel = coords[:, :, None] - coords[:, None, :] + (ws - 1)          # (2, N, N), in [0, 2ws-2]
        self.register_buffer("rel_index", rel[0] * (2 * ws - 1) + rel[1])  # (N, N) int64

        # attention mask that keeps tokens from different pre-shift regions apart
        img = torch.zeros(1, height, width, 1)
        region = 0
        for hs in (slice(0, -ws), slice(-ws, -shift_size), slice(-shift_size, None)):
            for wsl in (slice(0, -ws), slice(-ws, -shift_size), slice(-shift_size, None)):
                img[:, hs, wsl, :] = region
                region += 1
        win = window_partition(img, ws).squeeze(-1)                       # (num_windows, N)
        mask = (win[:, None, :] != win[:, :, None]).float() * -100.0
        self.register_buffer("shift_mask", mask)                          # (num_windows, N, N)

    def forward(self, x):
        # x: (batch, height, width, dim)
        b, h, w, c = x.shape
        ws, n = self.ws, self.ws * self.ws
        shortcut = x
        x = torch.roll(self.norm1(x), shifts=(-self.shift, -self.shift), dims=(1, 2))
        win = window_partition(x, ws)                                     # (b*nw, n, c)
        bw = win.shape[0]
        q, k, v = self.qkv(win).view(bw, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        attn = (q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)        # (b*nw, heads, n, n)
        bias = self.rel_bias_table[self.rel_index].permute(2, 0, 1)       # (heads, n, n)
        attn = attn + bias[None]
        nw = self.shift_mask.shape[0]
        attn = attn.view(b, nw, self.num_heads, n, n) + self.shift_mask[None, :, None]
        attn = attn.view(bw, self.num_heads, n, n).softmax(dim=-1)
        y = self.proj((attn @ v).transpose(1, 2).reshape(bw, n, c))
        y = window_reverse(y, ws, b, h, w)
        x = shortcut + torch.roll(y, shifts=(self.shift, self.shift), dims=(1, 2))
        x = x + self.fc2(F.gelu(self.fc1(self.norm2(x))))
        return x


def get_inputs():
    return [torch.randn(BATCH, HEIGHT, WIDTH, DIM)]


def get_init_inputs():
    return [HEIGHT, WIDTH, DIM, NUM_HEADS, WINDOW_SIZE, SHIFT_SIZE]
