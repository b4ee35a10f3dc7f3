"""Per-sample KL divergence KL(p || q) from log-probabilities log q and probabilities p, summed over classes."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["kl_div", "loss", "reduction", "log"]

BATCH = 8192
CLASSES = 8192

VARIANTS = [
    dict(BATCH=2047, CLASSES=32001),
    dict(BATCH=65537, CLASSES=1000),
]
SMALL = dict(BATCH=32, CLASSES=256)
SMALL_VARIANTS = [
    dict(BATCH=7, CLASSES=1001),
    dict(BATCH=45, CLASSES=19),
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, log_q, p):
        return F.kl_div(log_q, p, reduction="none").sum(dim=1)


def get_inputs():
    log_q = F.log_softmax(torch.randn(BATCH, CLASSES) * 2.0, dim=1)
    p = F.softmax(torch.randn(BATCH, CLASSES) * 2.0, dim=1)
    return [log_q, p]


def get_init_inputs():
    return []
