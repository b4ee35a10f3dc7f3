"""Multi-label classification loss per sample: linear label logits, binary cross-entropy with logits against 0/1 targets using per-label positive weights, averaged over labels."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "bce_with_logits", "sigmoid", "mean"]

BATCH = 8192
IN_FEATURES = 2048
NUM_LABELS = 4000

VARIANTS = [
    dict(BATCH=4095, IN_FEATURES=1024, NUM_LABELS=9605),
    dict(BATCH=12000, IN_FEATURES=768, NUM_LABELS=1001),
]
SMALL = dict(BATCH=24, IN_FEATURES=64, NUM_LABELS=50)
SMALL_VARIANTS = [
    dict(BATCH=7, IN_FEATURES=33, NUM_LABELS=13),
    dict(BATCH=33, IN_FEATURES=20, NUM_LABELS=70),
]


class Model(nn.Module):
    def __init__(self, in_features, num_labels):
        super().__init__()
        self.fc = nn.Linear(in_features, num_labels)
        # positive weights compensating label imbalance (fixed, not trained)
        self.register_buffer("pos_weight", 1.0 + 4.0 * torch.rand(num_labels))

    def forward(self, features, targets):
        logits = self.fc(features)
        loss = F.binary_cross_entropy_with_logits(logits, targets, pos_weight=self.pos_weight, reduction="none")
        return loss.mean(dim=-1)


def get_inputs():
    features = torch.randn(BATCH, IN_FEATURES) * 3.0
    targets = (torch.rand(BATCH, NUM_LABELS) < 0.1).float()
    return [features, targets]


def get_init_inputs():
    return [IN_FEATURES, NUM_LABELS]
