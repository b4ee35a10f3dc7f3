"""WaveNet-style residual layer: dilated 1D convolution to twice the channels, gated activation tanh(a) * sigmoid(b) and a residual add of the layer input."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv1d", "dilated", "tanh", "sigmoid", "gating", "residual"]

BATCH = 16
CHANNELS = 256
LENGTH = 4096
DILATION = 4

VARIANTS = [
    dict(BATCH=8, CHANNELS=192, LENGTH=12001, DILATION=16),
    dict(BATCH=32, CHANNELS=128, LENGTH=3333, DILATION=1),
]
SMALL = dict(BATCH=2, CHANNELS=8, LENGTH=64)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=5, LENGTH=47, DILATION=8),
    dict(BATCH=2, CHANNELS=6, LENGTH=81, DILATION=1),
]


class Model(nn.Module):
    def __init__(self, channels, dilation):
        super().__init__()
        self.conv = nn.Conv1d(channels, 2 * channels, 3, padding=dilation, dilation=dilation)

    def forward(self, x):
        filt, gate = self.conv(x).chunk(2, dim=1)
        y = torch.tanh(filt) * torch.sigmoid(gate)
        return x + y


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS, DILATION]
