"""Per-sample multi-class hinge loss (F.multi_margin_loss, reduction='none') of classifier scores against targets."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["hinge_loss", "loss", "reduction", "relu"]

BATCH = 131072
CLASSES = 1000
MARGIN = 1.0

VARIANTS = [
    dict(BATCH=32769, CLASSES=4001, MARGIN=0.5),
    dict(BATCH=500000, CLASSES=200, MARGIN=2.0),
]
SMALL = dict(BATCH=64, CLASSES=100)
SMALL_VARIANTS = [
    dict(BATCH=9, CLASSES=401, MARGIN=0.5),
    dict(BATCH=77, CLASSES=13, MARGIN=2.0),
]


class Model(nn.Module):
    def __init__(self, margin):
        super().__init__()
        self.margin = margin

    def forward(self, scores, targets):
        return F.multi_margin_loss(scores, targets, p=1, margin=self.margin, reduction="none")


def get_inputs():
    scores = torch.randn(BATCH, CLASSES)
    targets = torch.randint(0, CLASSES, (BATCH,))
    return [scores, targets]


def get_init_inputs():
    return [MARGIN]
