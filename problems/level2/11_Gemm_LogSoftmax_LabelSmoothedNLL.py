"""Fused linear cross-entropy: vocabulary projection of hidden states followed by the per-token label-smoothed cross-entropy against integer targets."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "log_softmax", "nll_loss", "cross_entropy", "label_smoothing"]

TOKENS = 2048
DIM = 2048
VOCAB = 32000
LABEL_SMOOTHING = 0.1

VARIANTS = [
    dict(TOKENS=999, DIM=1024, VOCAB=50257),
    dict(TOKENS=4097, DIM=768, VOCAB=8003),
]
SMALL = dict(TOKENS=32, DIM=48, VOCAB=300)
SMALL_VARIANTS = [
    dict(TOKENS=7, DIM=33, VOCAB=129),
    dict(TOKENS=40, DIM=20, VOCAB=77),
]


class Model(nn.Module):
    def __init__(self, dim, vocab, label_smoothing):
        super().__init__()
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.label_smoothing = label_smoothing

    def forward(self, hidden, targets):
        logits = self.lm_head(hidden)
        return F.cross_entropy(logits, targets, label_smoothing=self.label_smoothing, reduction="none")


def get_inputs():
    hidden = torch.randn(TOKENS, DIM) * 4.0
    targets = torch.randint(0, VOCAB, (TOKENS,))
    return [hidden, targets]


def get_init_inputs():
    return [DIM, VOCAB, LABEL_SMOOTHING]
