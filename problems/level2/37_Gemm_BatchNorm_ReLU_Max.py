"""PointNet global feature: shared per-point linear layer, BatchNorm over all points of the batch, ReLU, and max-pooling over the points of each cloud."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "batchnorm", "relu", "max", "pointnet"]

BATCH = 32
NUM_POINTS = 2048
IN_FEATURES = 128
OUT_FEATURES = 1024

VARIANTS = [
    dict(BATCH=16, NUM_POINTS=4097, IN_FEATURES=64, OUT_FEATURES=1024),
    dict(BATCH=64, NUM_POINTS=1000, IN_FEATURES=256, OUT_FEATURES=1536),
]
SMALL = dict(BATCH=2, NUM_POINTS=16, IN_FEATURES=8, OUT_FEATURES=24)
SMALL_VARIANTS = [
    dict(BATCH=3, NUM_POINTS=11, IN_FEATURES=5, OUT_FEATURES=17),
    dict(BATCH=1, NUM_POINTS=30, IN_FEATURES=12, OUT_FEATURES=9),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, points):
        b, n, _ = points.shape
        h = self.fc(points).view(b * n, -1)
        h = F.relu(self.bn(h)).view(b, n, -1)
        return h.max(dim=1).values


def get_inputs():
    return [torch.randn(BATCH, NUM_POINTS, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
