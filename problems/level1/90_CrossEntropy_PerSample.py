"""Per-sample cross-entropy loss (reduction='none') between classifier logits and integer class targets."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cross_entropy", "loss", "log_softmax", "reduction"]

BATCH = 4096
CLASSES = 32000

VARIANTS = [
    dict(BATCH=1001, CLASSES=50257),
    dict(BATCH=65536, CLASSES=1000),
]
SMALL = dict(BATCH=32, CLASSES=512)
SMALL_VARIANTS = [
    dict(BATCH=7, CLASSES=1001),
    dict(BATCH=61, CLASSES=10),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return F.cross_entropy(logits, targets, reduction="none")


def get_inputs():
    logits = torch.randn(BATCH, CLASSES) * 3.0
    targets = torch.randint(0, CLASSES, (BATCH,))
    return [logits, targets]


def get_init_inputs():
    return []
