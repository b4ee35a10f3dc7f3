"""WaveNet gated activation with local conditioning: a 1x1 convolution of the conditioning features added to the dilated-convolution output, split into filter and gate, and tanh(filter) * sigmoid(gate)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv1d", "pointwise", "add", "chunk", "tanh", "sigmoid", "mul", "gating"]

BATCH = 16
CHANNELS = 256
COND_CHANNELS = 80
TIME = 16000

VARIANTS = [
    dict(BATCH=4, CHANNELS=192, COND_CHANNELS=128, TIME=24001),
    dict(BATCH=32, CHANNELS=64, COND_CHANNELS=80, TIME=8191),
]
SMALL = dict(BATCH=2, CHANNELS=8, COND_CHANNELS=5, TIME=40)
SMALL_VARIANTS = [
    dict(BATCH=1, CHANNELS=5, COND_CHANNELS=3, TIME=33),
    dict(BATCH=3, CHANNELS=12, COND_CHANNELS=7, TIME=10),
]


class Model(nn.Module):
    def __init__(self, channels, cond_channels):
        super().__init__()
        self.cond_conv = nn.Conv1d(cond_channels, 2 * channels, kernel_size=1)

    def forward(self, dilated_out, cond):
        z = dilated_out + self.cond_conv(cond)
        filt, gate = z.chunk(2, dim=1)
        return torch.tanh(filt) * torch.sigmoid(gate)


def get_inputs():
    dilated_out = torch.randn(BATCH, 2 * CHANNELS, TIME)
    cond = torch.randn(BATCH, COND_CHANNELS, TIME) * 2.0
    return [dilated_out, cond]


def get_init_inputs():
    return [CHANNELS, COND_CHANNELS]
