"""Log-softmax over the vocabulary dimension of language-model logits (tokens, vocab)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["log_softmax", "softmax", "reduction", "exp", "log"]

TOKENS = 2048
VOCAB = 50257

VARIANTS = [
    dict(TOKENS=4096, VOCAB=32000),
    dict(TOKENS=777, VOCAB=128256),
]
SMALL = dict(TOKENS=16, VOCAB=1024)
SMALL_VARIANTS = [
    dict(TOKENS=5, VOCAB=2049),
    dict(TOKENS=31, VOCAB=257),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits):
        return F.log_softmax(logits, dim=-1)


def get_inputs():
    return [torch.randn(TOKENS, VOCAB) * 2.5]


def get_init_inputs():
    return []
