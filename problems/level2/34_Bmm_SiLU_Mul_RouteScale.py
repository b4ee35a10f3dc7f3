"""Grouped mixture-of-experts feed-forward: per-expert batched gate and up projections of the tokens routed to each expert, SiLU gating, and scaling by each token's routing weight."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["bmm", "silu", "mul", "glu", "swiglu", "moe", "broadcast"]

EXPERTS = 8
TOKENS_PER_EXPERT = 1024
DIM = 2048
HIDDEN = 1408

VARIANTS = [
    dict(EXPERTS=16, TOKENS_PER_EXPERT=511, DIM=1024, HIDDEN=1536),
    dict(EXPERTS=64, TOKENS_PER_EXPERT=129, DIM=2048, HIDDEN=1407),
]
SMALL = dict(EXPERTS=2, TOKENS_PER_EXPERT=8, DIM=16, HIDDEN=24)
SMALL_VARIANTS = [
    dict(EXPERTS=3, TOKENS_PER_EXPERT=5, DIM=13, HIDDEN=7),
    dict(EXPERTS=4, TOKENS_PER_EXPERT=9, DIM=8, HIDDEN=17),
]


class Model(nn.Module):
    def __init__(self, experts, dim, hidden):
        super().__init__()
        self.w_gate = nn.Parameter(torch.randn(experts, dim, hidden) / dim ** 0.5)
        self.w_up = nn.Parameter(torch.randn(experts, dim, hidden) / dim ** 0.5)

    def forward(self, x, route_weights):
        h = F.silu(torch.bmm(x, self.w_gate)) * torch.bmm(x, self.w_up)
        return h * route_weights.unsqueeze(-1)


def get_inputs():
    x = torch.randn(EXPERTS, TOKENS_PER_EXPERT, DIM)
    route_weights = torch.rand(EXPERTS, TOKENS_PER_EXPERT)
    return [x, route_weights]


def get_init_inputs():
    return [EXPERTS, DIM, HIDDEN]
