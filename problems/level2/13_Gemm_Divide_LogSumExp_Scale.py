"""Energy-based out-of-distribution score: linear class logits divided by a temperature, log-sum-exp over classes, and scaling by -temperature."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "divide", "logsumexp", "scale"]

BATCH = 4096
IN_FEATURES = 4096
NUM_CLASSES = 1000
TEMPERATURE = 2.0

VARIANTS = [
    dict(BATCH=2047, IN_FEATURES=2560, NUM_CLASSES=10450),
    dict(BATCH=12289, IN_FEATURES=1024, NUM_CLASSES=365),
]
SMALL = dict(BATCH=20, IN_FEATURES=80, NUM_CLASSES=40)
SMALL_VARIANTS = [
    dict(BATCH=9, IN_FEATURES=33, NUM_CLASSES=11),
    dict(BATCH=33, IN_FEATURES=16, NUM_CLASSES=100),
]


class Model(nn.Module):
    def __init__(self, in_features, num_classes, temperature):
        super().__init__()
        self.fc = nn.Linear(in_features, num_classes)
        self.temperature = temperature

    def forward(self, features):
        logits = self.fc(features)
        return -self.temperature * torch.logsumexp(logits / self.temperature, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES) * 5.0]


def get_init_inputs():
    return [IN_FEATURES, NUM_CLASSES, TEMPERATURE]
