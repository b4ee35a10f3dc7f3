"""ResNet basic block with a strided projection shortcut: two 3x3 conv+BatchNorm layers (the first strided) plus a 1x1 conv+BatchNorm shortcut, summed and passed through ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv2d", "batchnorm", "relu", "residual", "resnet"]

BATCH = 32
IN_CHANNELS = 128
OUT_CHANNELS = 256
HEIGHT = 56
WIDTH = 56
STRIDE = 2

VARIANTS = [
    dict(BATCH=24, IN_CHANNELS=64, OUT_CHANNELS=128, HEIGHT=111, WIDTH=97, STRIDE=2),
    dict(BATCH=40, IN_CHANNELS=192, OUT_CHANNELS=192, HEIGHT=29, WIDTH=29, STRIDE=1),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=16, HEIGHT=16, WIDTH=16, STRIDE=2)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=5, OUT_CHANNELS=11, HEIGHT=13, WIDTH=17, STRIDE=2),
    dict(BATCH=3, IN_CHANNELS=9, OUT_CHANNELS=9, HEIGHT=11, WIDTH=9, STRIDE=1),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )
        else:
            self.shortcut = nn.Identity()

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, STRIDE]
