"""LayerNorm over the hidden dimension of a (batch, seq, hidden) tensor with learned scale and shift; output and all gradients are judged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["layernorm", "normalization"]

BATCH = 32
SEQ_LEN = 1024
HIDDEN = 2048
EPS = 1e-5

VARIANTS = [
    dict(BATCH=8, SEQ_LEN=1023, HIDDEN=4095),
    dict(BATCH=48, SEQ_LEN=777, HIDDEN=1536),
]
SMALL = dict(BATCH=4, SEQ_LEN=32, HIDDEN=64)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=17, HIDDEN=95),
    dict(BATCH=5, SEQ_LEN=9, HIDDEN=257),
]


class Model(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.2)
            self.norm.bias.normal_(0.0, 0.2)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    # Non-zero mean and non-unit scale so the normalization does real work.
    return [torch.randn(BATCH, SEQ_LEN, HIDDEN) * 2.5 + 0.7]


def get_init_inputs():
    return [HIDDEN, EPS]
