"""Per-sample triplet margin loss (reduction='none') over anchor, positive and negative embeddings."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["triplet_margin_loss", "loss", "reduction", "norm"]

BATCH = 16384
DIM = 4096
MARGIN = 1.0

VARIANTS = [
    dict(BATCH=5001, DIM=8191, MARGIN=0.5),
    dict(BATCH=65536, DIM=1000, MARGIN=2.0),
]
SMALL = dict(BATCH=32, DIM=256)
SMALL_VARIANTS = [
    dict(BATCH=7, DIM=1001, MARGIN=0.5),
    dict(BATCH=45, DIM=33, MARGIN=2.0),
]


class Model(nn.Module):
    def __init__(self, margin):
        super().__init__()
        self.margin = margin

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=2.0, reduction="none")


def get_inputs():
    anchor = torch.randn(BATCH, DIM)
    # independent draws: d(a, p) - d(a, n) has std ~1 for any DIM, so most (not all) triplets violate the margin
    positive = torch.randn(BATCH, DIM)
    negative = torch.randn(BATCH, DIM)
    return [anchor, positive, negative]


def get_init_inputs():
    return [MARGIN]
