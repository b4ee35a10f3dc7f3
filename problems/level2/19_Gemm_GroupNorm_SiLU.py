"""Group-normalized MLP layer: linear projection, GroupNorm over contiguous groups of output features, and SiLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "groupnorm", "silu"]

BATCH = 4096
IN_FEATURES = 2048
OUT_FEATURES = 4096
NUM_GROUPS = 32

VARIANTS = [
    dict(BATCH=1023, IN_FEATURES=3072, OUT_FEATURES=2560, NUM_GROUPS=20),
    dict(BATCH=8000, IN_FEATURES=1000, OUT_FEATURES=1536, NUM_GROUPS=48),
]
SMALL = dict(BATCH=24, IN_FEATURES=40, OUT_FEATURES=64, NUM_GROUPS=8)
SMALL_VARIANTS = [
    dict(BATCH=7, IN_FEATURES=33, OUT_FEATURES=45, NUM_GROUPS=5),
    dict(BATCH=37, IN_FEATURES=20, OUT_FEATURES=24, NUM_GROUPS=3),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features, num_groups):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.gn = nn.GroupNorm(num_groups, out_features)

    def forward(self, x):
        return F.silu(self.gn(self.fc(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, NUM_GROUPS]
