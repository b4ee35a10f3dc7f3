"""ResNet bottleneck block: 1x1 reduce, 3x3 (optionally strided) and 1x1 expand convolutions with BatchNorm and ReLU, added to an identity or 1x1 projection shortcut, then ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv2d", "batchnorm", "relu", "residual", "bottleneck", "resnet"]

BATCH = 32
IN_CHANNELS = 256
MID_CHANNELS = 64
OUT_CHANNELS = 256
HEIGHT = 56
WIDTH = 56
STRIDE = 1

VARIANTS = [
    dict(BATCH=24, IN_CHANNELS=512, MID_CHANNELS=256, OUT_CHANNELS=1024, HEIGHT=29, WIDTH=29, STRIDE=2),
    dict(BATCH=17, IN_CHANNELS=320, MID_CHANNELS=80, OUT_CHANNELS=320, HEIGHT=63, WIDTH=47, STRIDE=1),
]
SMALL = dict(BATCH=2, IN_CHANNELS=16, MID_CHANNELS=4, OUT_CHANNELS=16, HEIGHT=12, WIDTH=12, STRIDE=1)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=12, MID_CHANNELS=6, OUT_CHANNELS=24, HEIGHT=15, WIDTH=13, STRIDE=2),
    dict(BATCH=3, IN_CHANNELS=20, MID_CHANNELS=5, OUT_CHANNELS=20, HEIGHT=9, WIDTH=11, STRIDE=1),
]


class Model(nn.Module):
    def __init__(self, in_channels, mid_channels, out_channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, mid_channels, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid_channels)
        self.conv2 = nn.Conv2d(mid_channels, mid_channels, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(mid_channels)
        self.conv3 = nn.Conv2d(mid_channels, out_channels, 1, bias=False)
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
    return [IN_CHANNELS, MID_CHANNELS, OUT_CHANNELS, STRIDE]
