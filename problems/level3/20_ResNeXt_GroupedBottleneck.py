"""ResNeXt bottleneck block: 1x1 conv+BN+ReLU, 3x3 grouped conv (cardinality groups)+BN+ReLU, 1x1 conv+BN, added to an identity or 1x1 projection shortcut, then ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "group_conv2d", "conv2d", "batchnorm", "relu", "residual", "bottleneck", "resnext"]

BATCH = 32
IN_CHANNELS = 256
GROUP_WIDTH = 4
CARDINALITY = 32
OUT_CHANNELS = 256
HEIGHT = 56
WIDTH = 56
STRIDE = 1

VARIANTS = [
    dict(BATCH=24, IN_CHANNELS=256, GROUP_WIDTH=8, CARDINALITY=32, OUT_CHANNELS=512, HEIGHT=57, WIDTH=57, STRIDE=2),
    dict(BATCH=40, IN_CHANNELS=432, GROUP_WIDTH=48, CARDINALITY=9, OUT_CHANNELS=432, HEIGHT=27, WIDTH=25, STRIDE=1),
]
SMALL = dict(BATCH=2, IN_CHANNELS=16, GROUP_WIDTH=2, CARDINALITY=4, OUT_CHANNELS=16, HEIGHT=12, WIDTH=12, STRIDE=1)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=12, GROUP_WIDTH=3, CARDINALITY=3, OUT_CHANNELS=20, HEIGHT=13, WIDTH=11, STRIDE=2),
    dict(BATCH=3, IN_CHANNELS=10, GROUP_WIDTH=2, CARDINALITY=5, OUT_CHANNELS=10, HEIGHT=9, WIDTH=7, STRIDE=1),
]


class Model(nn.Module):
    def __init__(self, in_channels, group_width, cardinality, out_channels, stride):
        super().__init__()
        width = group_width * cardinality
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, groups=cardinality, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )
        else:
            self.shortcut = nn.Identity()

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + self.shortcut(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, GROUP_WIDTH, CARDINALITY, OUT_CHANNELS, STRIDE]
