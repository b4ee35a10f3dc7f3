"""CosFace large-margin classifier logits: x W^T divided by the norms of each embedding and each class weight, a margin subtracted at the target class, and scaling by s."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "norm", "divide", "scatter", "subtract", "scale", "cosface"]

BATCH = 1024
EMBED_DIM = 512
NUM_CLASSES = 85742
SCALE = 64.0
MARGIN = 0.35

VARIANTS = [
    dict(BATCH=2047, EMBED_DIM=256, NUM_CLASSES=10575),
    dict(BATCH=512, EMBED_DIM=1024, NUM_CLASSES=50001),
]
SMALL = dict(BATCH=16, EMBED_DIM=24, NUM_CLASSES=50)
SMALL_VARIANTS = [
    dict(BATCH=5, EMBED_DIM=17, NUM_CLASSES=13),
    dict(BATCH=23, EMBED_DIM=8, NUM_CLASSES=71),
]


class Model(nn.Module):
    def __init__(self, embed_dim, num_classes, scale, margin):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_classes, embed_dim))
        self.scale = scale
        self.margin = margin

    def forward(self, emb, labels):
        dots = torch.matmul(emb, self.weight.t())
        x_norm = emb.norm(dim=1, keepdim=True).clamp_min(1e-12)
        w_norm = self.weight.norm(dim=1).clamp_min(1e-12)
        cos = dots / (x_norm * w_norm)
        margin = torch.zeros_like(cos).scatter_(1, labels.unsqueeze(1), self.margin)
        return self.scale * (cos - margin)


def get_inputs():
    emb = torch.randn(BATCH, EMBED_DIM) * 3.0
    labels = torch.randint(0, NUM_CLASSES, (BATCH,))
    return [emb, labels]


def get_init_inputs():
    return [EMBED_DIM, NUM_CLASSES, SCALE, MARGIN]
