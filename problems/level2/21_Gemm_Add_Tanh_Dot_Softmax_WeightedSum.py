"""Additive (Bahdanau) attention context: projection of the encoder states, addition of the projected decoder query, tanh, dot product with a learned score vector, softmax over the sequence, and the attention-weighted sum of the encoder states."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "add", "tanh", "dot", "sum", "softmax", "bmm", "attention"]

BATCH = 32
SEQ_LEN = 2048
ENC_DIM = 1024
ATTN_DIM = 1024

VARIANTS = [
    dict(BATCH=8, SEQ_LEN=4099, ENC_DIM=512, ATTN_DIM=768),
    dict(BATCH=64, SEQ_LEN=777, ENC_DIM=1280, ATTN_DIM=640),
]
SMALL = dict(BATCH=2, SEQ_LEN=24, ENC_DIM=32, ATTN_DIM=40)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=37, ENC_DIM=17, ATTN_DIM=24),
    dict(BATCH=3, SEQ_LEN=9, ENC_DIM=50, ATTN_DIM=13),
]


class Model(nn.Module):
    def __init__(self, enc_dim, attn_dim):
        super().__init__()
        self.key_proj = nn.Linear(enc_dim, attn_dim, bias=False)
        self.score = nn.Parameter(torch.randn(attn_dim) * (3.0 / attn_dim ** 0.5))

    def forward(self, encoder_states, query_proj):
        e = torch.tanh(self.key_proj(encoder_states) + query_proj.unsqueeze(1))
        scores = (e * self.score).sum(dim=-1)
        alpha = F.softmax(scores, dim=-1)
        return torch.bmm(alpha.unsqueeze(1), encoder_states).squeeze(1)


def get_inputs():
    encoder_states = torch.randn(BATCH, SEQ_LEN, ENC_DIM)
    query_proj = torch.randn(BATCH, ATTN_DIM) * 0.5
    return [encoder_states, query_proj]


def get_init_inputs():
    return [ENC_DIM, ATTN_DIM]
