"""MobileNetV2 inverted residual block: 1x1 expansion conv+BN+ReLU6, 3x3 depthwise conv+BN+ReLU6, linear 1x1 projection conv+BN, with an identity shortcut when the shape is preserved."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv2d", "depthwise_conv2d", "batchnorm", "relu6", "residual", "mobilenet"]

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 64
EXPAND_RATIO = 6
HEIGHT = 56
WIDTH = 56
STRIDE = 1

VARIANTS = [
    dict(BATCH=48, IN_CHANNELS=96, OUT_CHANNELS=160, EXPAND_RATIO=6, HEIGHT=29, WIDTH=29, STRIDE=2),
    dict(BATCH=48, IN_CHANNELS=24, OUT_CHANNELS=24, EXPAND_RATIO=6, HEIGHT=75, WIDTH=61, STRIDE=1),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=8, EXPAND_RATIO=4, HEIGHT=12, WIDTH=12, STRIDE=1)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=10, EXPAND_RATIO=6, HEIGHT=13, WIDTH=11, STRIDE=2),
    dict(BATCH=3, IN_CHANNELS=7, OUT_CHANNELS=7, EXPAND_RATIO=3, HEIGHT=9, WIDTH=15, STRIDE=1),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, expand_ratio, stride):
        super().__init__()
        hidden = in_channels * expand_ratio
        self.use_residual = stride == 1 and in_channels == out_channels
        self.expand = nn.Conv2d(in_channels, hidden, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(hidden)
        self.dw = nn.Conv2d(hidden, hidden, 3, stride=stride, padding=1, groups=hidden, bias=False)
        self.bn2 = nn.BatchNorm2d(hidden)
        self.project = nn.Conv2d(hidden, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        out = F.relu6(self.bn1(self.expand(x)))
        out = F.relu6(self.bn2(self.dw(out)))
        out = self.bn3(self.project(out))
        if self.use_residual:
            out = out + x
        return out


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, EXPAND_RATIO, STRIDE]
