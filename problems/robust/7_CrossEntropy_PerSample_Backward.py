"""Per-sample cross-entropy loss (reduction='none') of class logits against int64 targets; the losses and the gradient of the logits are judged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["cross_entropy", "log_softmax", "nll_loss", "softmax"]

BATCH = 4096
NUM_CLASSES = 32000

VARIANTS = [
    dict(BATCH=1999, NUM_CLASSES=50257),
    dict(BATCH=24999, NUM_CLASSES=1001),
]
SMALL = dict(BATCH=32, NUM_CLASSES=100)
SMALL_VARIANTS = [
    dict(BATCH=7, NUM_CLASSES=1001),
    dict(BATCH=53, NUM_CLASSES=13),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return F.cross_entropy(logits, targets, reduction="none")


def get_inputs():
    logits = torch.randn(BATCH, NUM_CLASSES) * 2.0
    targets = torch.randint(0, NUM_CLASSES, (BATCH,), dtype=torch.int64)
    return [logits, targets]


def get_init_inputs():
    return []
