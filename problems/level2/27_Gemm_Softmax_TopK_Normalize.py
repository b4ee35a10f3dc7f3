"""Mixture-of-experts router: linear gate logits over experts, softmax, top-k selection, and renormalization of the selected routing weights."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "softmax", "topk", "sum", "divide", "moe"]

TOKENS = 32768
DIM = 4096
NUM_EXPERTS = 64
TOP_K = 6

VARIANTS = [
    dict(TOKENS=8191, DIM=5120, NUM_EXPERTS=160, TOP_K=6),
    dict(TOKENS=65535, DIM=2048, NUM_EXPERTS=8, TOP_K=2),
]
SMALL = dict(TOKENS=32, DIM=48, NUM_EXPERTS=8, TOP_K=2)
SMALL_VARIANTS = [
    dict(TOKENS=9, DIM=33, NUM_EXPERTS=5, TOP_K=3),
    dict(TOKENS=41, DIM=20, NUM_EXPERTS=16, TOP_K=4),
]


class Model(nn.Module):
    def __init__(self, dim, num_experts, top_k):
        super().__init__()
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.top_k = top_k

    def forward(self, x):
        probs = F.softmax(self.gate(x), dim=-1)
        weights = probs.topk(self.top_k, dim=-1).values
        return weights / weights.sum(dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(TOKENS, DIM) * 2.0]


def get_init_inputs():
    return [DIM, NUM_EXPERTS, TOP_K]
