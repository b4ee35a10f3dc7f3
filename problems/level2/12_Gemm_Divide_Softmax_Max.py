"""Classifier confidence score: linear class logits divided by a calibration temperature, softmax over classes, and the maximum class probability of each sample."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "divide", "softmax", "max"]

BATCH = 8192
IN_FEATURES = 2048
NUM_CLASSES = 1000
TEMPERATURE = 1.5

VARIANTS = [
    dict(BATCH=3001, IN_FEATURES=1280, NUM_CLASSES=21843),
    dict(BATCH=16384, IN_FEATURES=768, NUM_CLASSES=1001),
]
SMALL = dict(BATCH=24, IN_FEATURES=64, NUM_CLASSES=50)
SMALL_VARIANTS = [
    dict(BATCH=7, IN_FEATURES=33, NUM_CLASSES=10),
    dict(BATCH=41, IN_FEATURES=20, NUM_CLASSES=129),
]


class Model(nn.Module):
    def __init__(self, in_features, num_classes, temperature):
        super().__init__()
        self.fc = nn.Linear(in_features, num_classes)
        self.temperature = temperature

    def forward(self, features):
        probs = F.softmax(self.fc(features) / self.temperature, dim=-1)
        return probs.max(dim=-1).values


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES) * 4.0]


def get_init_inputs():
    return [IN_FEATURES, NUM_CLASSES, TEMPERATURE]
