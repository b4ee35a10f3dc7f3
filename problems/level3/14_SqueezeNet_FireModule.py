"""SqueezeNet fire module: a 1x1 squeeze conv+ReLU feeding parallel 1x1 and 3x3 expand convs+ReLU whose outputs are concatenated along channels."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv2d", "relu", "concat", "squeezenet"]

BATCH = 64
IN_CHANNELS = 128
SQUEEZE_CHANNELS = 32
EXPAND1X1_CHANNELS = 128
EXPAND3X3_CHANNELS = 128
HEIGHT = 55
WIDTH = 55

VARIANTS = [
    dict(BATCH=96, IN_CHANNELS=256, SQUEEZE_CHANNELS=48, EXPAND1X1_CHANNELS=192, EXPAND3X3_CHANNELS=192, HEIGHT=27, WIDTH=27),
    dict(BATCH=100, IN_CHANNELS=96, SQUEEZE_CHANNELS=16, EXPAND1X1_CHANNELS=64, EXPAND3X3_CHANNELS=80, HEIGHT=57, WIDTH=43),
]
SMALL = dict(BATCH=2, IN_CHANNELS=16, SQUEEZE_CHANNELS=4, EXPAND1X1_CHANNELS=8, EXPAND3X3_CHANNELS=8, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=13, SQUEEZE_CHANNELS=5, EXPAND1X1_CHANNELS=7, EXPAND3X3_CHANNELS=9, HEIGHT=11, WIDTH=9),
    dict(BATCH=2, IN_CHANNELS=21, SQUEEZE_CHANNELS=3, EXPAND1X1_CHANNELS=11, EXPAND3X3_CHANNELS=6, HEIGHT=7, WIDTH=13),
]


class Model(nn.Module):
    def __init__(self, in_channels, squeeze_channels, expand1x1_channels, expand3x3_channels):
        super().__init__()
        self.squeeze = nn.Conv2d(in_channels, squeeze_channels, 1)
        self.expand1x1 = nn.Conv2d(squeeze_channels, expand1x1_channels, 1)
        self.expand3x3 = nn.Conv2d(squeeze_channels, expand3x3_channels, 3, padding=1)

    def forward(self, x):
        s = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.expand1x1(s)), F.relu(self.expand3x3(s))], dim=1)


def get_inputs():
    # Inputs of a fire module are ReLU outputs of the previous layer in the real network; keep
    # them signed here but with a positive offset so both ReLU regimes are exercised.
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH) + 0.5]


def get_init_inputs():
    return [IN_CHANNELS, SQUEEZE_CHANNELS, EXPAND1X1_CHANNELS, EXPAND3X3_CHANNELS]
