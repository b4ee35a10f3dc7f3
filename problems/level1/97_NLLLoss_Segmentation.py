"""Per-pixel class-weighted negative log-likelihood (reduction='none', with ignored pixels) of segmentation log-probabilities."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["nll_loss", "loss", "gather"]

BATCH = 24
CLASSES = 19
HEIGHT = 512
WIDTH = 1024
IGNORE_INDEX = 255

VARIANTS = [
    dict(BATCH=10, CLASSES=11, HEIGHT=1023, WIDTH=1025),
    dict(BATCH=40, CLASSES=21, HEIGHT=577, WIDTH=511),
]
SMALL = dict(BATCH=2, CLASSES=19, HEIGHT=16, WIDTH=32)
SMALL_VARIANTS = [
    dict(BATCH=3, CLASSES=7, HEIGHT=13, WIDTH=11),
    dict(BATCH=1, CLASSES=21, HEIGHT=9, WIDTH=27),
]


class Model(nn.Module):
    def __init__(self, classes, ignore_index):
        super().__init__()
        self.register_buffer("class_weight", 0.5 + torch.rand(classes))
        self.ignore_index = ignore_index

    def forward(self, log_probs, targets):
        return F.nll_loss(log_probs, targets, weight=self.class_weight, ignore_index=self.ignore_index,
                          reduction="none")


def get_inputs():
    log_probs = F.log_softmax(torch.randn(BATCH, CLASSES, HEIGHT, WIDTH) * 2.0, dim=1)
    targets = torch.randint(0, CLASSES, (BATCH, HEIGHT, WIDTH))
    unlabelled = torch.rand(BATCH, HEIGHT, WIDTH) < 0.05  # ~5% of the pixels are ignored
    targets = torch.where(unlabelled, torch.full_like(targets, IGNORE_INDEX), targets)
    return [log_probs, targets]


def get_init_inputs():
    return [CLASSES, IGNORE_INDEX]
