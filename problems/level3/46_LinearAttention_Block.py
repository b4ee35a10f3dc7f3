"""Pre-norm non-causal linear-attention block (elu+1 feature map): per-head key-value summaries replace the softmax score matrix, followed by normalisation, output projection and a residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["attention", "linear_attention", "elu", "einsum", "layernorm", "gemm", "residual"]

BATCH = 8
SEQ_LEN = 4096
D_MODEL = 512
NUM_HEADS = 8

VARIANTS = [
    dict(BATCH=3, SEQ_LEN=16001, D_MODEL=384, NUM_HEADS=6),
    dict(BATCH=32, SEQ_LEN=999, D_MODEL=1024, NUM_HEADS=8),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, D_MODEL=32, NUM_HEADS=4)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=13, D_MODEL=27, NUM_HEADS=3),
    dict(BATCH=3, SEQ_LEN=9, D_MODEL=20, NUM_HEADS=2),
]


class Model(nn.Module):
    def __init__(self, d_model, num_heads, eps=1e-6):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.eps = eps
        self.norm = nn.LayerNorm(d_model)
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        with torch.no_grad():  # trained-model-like feature contrast instead of near-uniform weights at default init
            self.q_proj.weight.mul_(2.5)
            self.k_proj.weight.mul_(2.5)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        y = self.norm(x)
        q = F.elu(self.q_proj(y).view(b, t, self.num_heads, self.head_dim)) + 1.0   # positive features
        k = F.elu(self.k_proj(y).view(b, t, self.num_heads, self.head_dim)) + 1.0
        v = self.v_proj(y).view(b, t, self.num_heads, self.head_dim)
        kv = torch.einsum("bthd,bthe->bhde", k, v)                                  # (b, h, hd, hd)
        denom = torch.einsum("bthd,bhd->bth", q, k.sum(dim=1)) + self.eps          # (b, t, h)
        out = torch.einsum("bthd,bhde->bthe", q, kv) / denom.unsqueeze(-1)
        return x + self.out_proj(out.reshape(b, t, d))


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, D_MODEL)]


def get_init_inputs():
    return [D_MODEL, NUM_HEADS]
