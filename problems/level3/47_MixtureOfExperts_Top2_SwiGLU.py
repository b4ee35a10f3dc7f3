"""Sparse mixture-of-experts feed-forward layer: a linear router picks the top-2 of several SwiGLU experts per token, and the experts' outputs are combined with renormalised softmax gate weights."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["moe", "mixture_of_experts", "topk", "routing", "gather", "scatter", "softmax", "swiglu", "silu", "gemm"]

BATCH = 8
SEQ_LEN = 512
D_MODEL = 1024
FFN_DIM = 2816
NUM_EXPERTS = 8

VARIANTS = [
    dict(BATCH=3, SEQ_LEN=1001, D_MODEL=768, FFN_DIM=2048, NUM_EXPERTS=16),
    dict(BATCH=16, SEQ_LEN=129, D_MODEL=1280, FFN_DIM=3456, NUM_EXPERTS=6),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, D_MODEL=16, FFN_DIM=32, NUM_EXPERTS=4)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=15, D_MODEL=13, FFN_DIM=27, NUM_EXPERTS=5),
    dict(BATCH=3, SEQ_LEN=11, D_MODEL=20, FFN_DIM=35, NUM_EXPERTS=3),
]


class SwiGLUExpert(nn.Module):
    def __init__(self, d_model, ffn_dim):
        super().__init__()
        self.w1 = nn.Linear(d_model, ffn_dim, bias=False)
        self.w3 = nn.Linear(d_model, ffn_dim, bias=False)
        self.w2 = nn.Linear(ffn_dim, d_model, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Model(nn.Module):
    def __init__(self, d_model, ffn_dim, num_experts):
        super().__init__()
        self.router = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([SwiGLUExpert(d_model, ffn_dim) for _ in range(num_experts)])

    def forward(self, x):
        b, t, d = x.shape
        tokens = x.reshape(-1, d)
        probs = self.router(tokens).softmax(dim=-1)                      # (n, experts)
        gate, chosen = probs.topk(2, dim=-1)                             # (n, 2)
        gate = gate / gate.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            token_idx, slot = torch.where(chosen == e)                   # each token picks e at most once
            if token_idx.numel() == 0:
                continue
            y = expert(tokens[token_idx]) * gate[token_idx, slot].unsqueeze(-1)
            out.index_add_(0, token_idx, y)
        return out.view(b, t, d)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, D_MODEL)]


def get_init_inputs():
    return [D_MODEL, FFN_DIM, NUM_EXPERTS]
