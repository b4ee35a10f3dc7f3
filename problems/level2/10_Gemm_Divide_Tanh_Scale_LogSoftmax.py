"""Gemma-2 style language-model head: vocabulary projection, logit soft-capping cap * tanh(logits / cap), and log-softmax over the vocabulary."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "divide", "tanh", "scale", "log_softmax", "softcap"]

TOKENS = 1024
DIM = 2304
VOCAB = 32000
SOFTCAP = 15.0

VARIANTS = [
    dict(TOKENS=511, DIM=2048, VOCAB=50257),
    dict(TOKENS=2047, DIM=1536, VOCAB=12345),
]
SMALL = dict(TOKENS=16, DIM=64, VOCAB=500)
SMALL_VARIANTS = [
    dict(TOKENS=5, DIM=33, VOCAB=257),
    dict(TOKENS=23, DIM=48, VOCAB=101),
]


class Model(nn.Module):
    def __init__(self, dim, vocab, softcap):
        super().__init__()
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.softcap = softcap

    def forward(self, hidden):
        logits = self.lm_head(hidden)
        logits = torch.tanh(logits / self.softcap) * self.softcap
        return F.log_softmax(logits, dim=-1)


def get_inputs():
    # scaled so that the largest logits reach the soft-cap region
    return [torch.randn(TOKENS, DIM) * 10.0]


def get_init_inputs():
    return [DIM, VOCAB, SOFTCAP]
