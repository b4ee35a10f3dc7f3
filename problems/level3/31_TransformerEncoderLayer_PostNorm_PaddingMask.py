"""BERT-style post-norm transformer encoder layer written out (multi-head self-attention with a key padding mask, residual + LayerNorm, GELU MLP, residual + LayerNorm)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["transformer", "attention", "softmax", "layernorm", "gelu", "gemm", "residual", "mask"]

BATCH = 16
SEQ_LEN = 512
D_MODEL = 768
NUM_HEADS = 12
D_FF = 3072

VARIANTS = [
    dict(BATCH=7, SEQ_LEN=1000, D_MODEL=576, NUM_HEADS=9, D_FF=2304),
    dict(BATCH=48, SEQ_LEN=197, D_MODEL=1024, NUM_HEADS=16, D_FF=4096),
]
SMALL = dict(BATCH=2, SEQ_LEN=12, D_MODEL=24, NUM_HEADS=3, D_FF=48)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=9, D_MODEL=20, NUM_HEADS=2, D_FF=36),
    dict(BATCH=1, SEQ_LEN=15, D_MODEL=28, NUM_HEADS=4, D_FF=45),
]


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        with torch.no_grad():  # trained-model-like attention sharpness: score std ~2 instead of ~0.3 at default init
            self.qkv.weight[: 2 * d_model].mul_(2.5)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, key_padding_mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)      # (b, h, t, t)
        scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
        attn = scores.softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, t, d)
        return self.out(y)


class Model(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.attn = MultiHeadSelfAttention(d_model, num_heads)
        self.norm1 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, key_padding_mask):
        # x: (batch, seq, d_model); key_padding_mask: (batch, seq) bool, True = padding key
        x = self.norm1(x + self.attn(x, key_padding_mask))
        x = self.norm2(x + self.fc2(F.gelu(self.fc1(x))))
        return x


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, D_MODEL)
    lengths = torch.randint(SEQ_LEN // 2, SEQ_LEN + 1, (BATCH,))
    key_padding_mask = torch.arange(SEQ_LEN)[None, :] >= lengths[:, None]
    return [x, key_padding_mask]


def get_init_inputs():
    return [D_MODEL, NUM_HEADS, D_FF]
