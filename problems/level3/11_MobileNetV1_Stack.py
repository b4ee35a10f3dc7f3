"""MobileNetV1 feature extractor: a strided 3x3 conv stem followed by a stack of depthwise-separable blocks (3x3 depthwise conv+BN+ReLU, then 1x1 pointwise conv+BN+ReLU)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "depthwise_conv2d", "conv2d", "batchnorm", "relu", "mobilenet"]

BATCH = 32
IMAGE_SIZE = 160
STEM_CHANNELS = 32
CHANNELS = [64, 128, 128, 256, 256, 512, 512, 512]
STRIDES = [1, 2, 1, 2, 1, 2, 1, 1]

VARIANTS = [
    dict(BATCH=16, IMAGE_SIZE=223, STEM_CHANNELS=32, CHANNELS=[64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 1024],
         STRIDES=[1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 2]),
    dict(BATCH=50, IMAGE_SIZE=129, STEM_CHANNELS=24, CHANNELS=[48, 96, 96, 192, 192, 384], STRIDES=[1, 2, 1, 2, 1, 2]),
]
SMALL = dict(BATCH=2, IMAGE_SIZE=24, STEM_CHANNELS=4, CHANNELS=[8, 16, 16, 32], STRIDES=[1, 2, 1, 2])
SMALL_VARIANTS = [
    dict(BATCH=2, IMAGE_SIZE=19, STEM_CHANNELS=3, CHANNELS=[6, 10, 14], STRIDES=[1, 2, 2]),
    dict(BATCH=3, IMAGE_SIZE=17, STEM_CHANNELS=5, CHANNELS=[7, 13, 13, 21, 21], STRIDES=[1, 2, 1, 2, 1]),
]


class DepthwiseSeparable(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.dw = nn.Conv2d(cin, cin, 3, stride=stride, padding=1, groups=cin, bias=False)
        self.bn_dw = nn.BatchNorm2d(cin)
        self.pw = nn.Conv2d(cin, cout, 1, bias=False)
        self.bn_pw = nn.BatchNorm2d(cout)

    def forward(self, x):
        x = F.relu(self.bn_dw(self.dw(x)))
        return F.relu(self.bn_pw(self.pw(x)))


class Model(nn.Module):
    def __init__(self, stem_channels, channels, strides):
        super().__init__()
        self.stem = nn.Conv2d(3, stem_channels, 3, stride=2, padding=1, bias=False)
        self.stem_bn = nn.BatchNorm2d(stem_channels)
        blocks = []
        cin = stem_channels
        for cout, stride in zip(channels, strides):
            blocks.append(DepthwiseSeparable(cin, cout, stride))
            cin = cout
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        x = F.relu(self.stem_bn(self.stem(x)))
        return self.blocks(x)


def get_inputs():
    return [torch.randn(BATCH, 3, IMAGE_SIZE, IMAGE_SIZE)]


def get_init_inputs():
    return [STEM_CHANNELS, CHANNELS, STRIDES]
