"""Linear layer followed by ReLU, relu(x W^T + b); the output and the gradients of x, W and b are judged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["gemm", "linear", "bias", "relu"]

BATCH = 4096
IN_FEATURES = 1024
OUT_FEATURES = 4096

VARIANTS = [
    dict(BATCH=3001, IN_FEATURES=2048, OUT_FEATURES=1537),
    dict(BATCH=1536, IN_FEATURES=767, OUT_FEATURES=6144),
]
SMALL = dict(BATCH=32, IN_FEATURES=64, OUT_FEATURES=96)
SMALL_VARIANTS = [
    dict(BATCH=9, IN_FEATURES=47, OUT_FEATURES=33),
    dict(BATCH=41, IN_FEATURES=121, OUT_FEATURES=19),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        # Moderate, mostly positive bias: pre-activations have std ~0.58, so
        # no unit is dead and about 55-60% of the pre-activations are active.
        with torch.no_grad():
            self.linear.bias.uniform_(-0.1, 0.3)

    def forward(self, x):
        return F.relu(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
