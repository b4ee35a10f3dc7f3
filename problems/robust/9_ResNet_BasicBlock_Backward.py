"""ResNet basic block, relu(bn2(conv2(relu(bn1(conv1(x))))) + x), with batch norm using batch statistics (training mode); output and all gradients are judged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["conv2d", "batchnorm", "relu", "residual", "add"]

BATCH = 32
CHANNELS = 64
HEIGHT = 56
WIDTH = 56

VARIANTS = [
    dict(BATCH=40, CHANNELS=128, HEIGHT=28, WIDTH=28),
    dict(BATCH=24, CHANNELS=96, HEIGHT=45, WIDTH=61),
]
SMALL = dict(BATCH=4, CHANNELS=8, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=5, HEIGHT=11, WIDTH=9),
    dict(BATCH=2, CHANNELS=12, HEIGHT=7, WIDTH=13),
]


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        # track_running_stats=False: batch statistics are always used (training-mode
        # batch norm), in train() and eval() alike, and no buffers are mutated.
        self.bn1 = nn.BatchNorm2d(channels, track_running_stats=False)
        self.bn2 = nn.BatchNorm2d(channels, track_running_stats=False)
        with torch.no_grad():
            for bn in (self.bn1, self.bn2):
                bn.weight.normal_(1.0, 0.2)
                bn.bias.normal_(0.0, 0.2)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
