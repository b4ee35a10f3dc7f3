"""relu(a * scale + b): an elementwise problem for the adversarial tests."""
import torch
import torch.nn as nn

TAGS = ["elementwise", "scale", "add", "relu"]
N = 4096
M = 4096
VARIANTS = [dict(N=1023, M=3001), dict(N=77, M=8191)]
SMALL = dict(N=64, M=96)
SMALL_VARIANTS = [dict(N=7, M=33), dict(N=41, M=5)]


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return torch.relu(a * self.scale + b)


def get_inputs():
    return [torch.randn(N, M), torch.randn(N, M)]


def get_init_inputs():
    return [1.5]
