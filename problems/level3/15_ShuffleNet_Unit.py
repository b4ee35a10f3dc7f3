"""ShuffleNet (v1) unit: grouped 1x1 conv+BN+ReLU, channel shuffle, 3x3 depthwise conv+BN, grouped 1x1 conv+BN, merged with the input by addition (stride 1) or by concatenation with a 3x3 average-pooled input (stride 2), then ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "group_conv2d", "channel_shuffle", "depthwise_conv2d", "batchnorm", "relu", "avg_pool2d", "concat", "residual", "shufflenet"]

BATCH = 128
IN_CHANNELS = 240
OUT_CHANNELS = 240
GROUPS = 3
HEIGHT = 28
WIDTH = 28
STRIDE = 1

VARIANTS = [
    dict(BATCH=96, IN_CHANNELS=272, OUT_CHANNELS=544, GROUPS=4, HEIGHT=29, WIDTH=29, STRIDE=2),
    dict(BATCH=64, IN_CHANNELS=384, OUT_CHANNELS=384, GROUPS=8, HEIGHT=27, WIDTH=23, STRIDE=1),
]
SMALL = dict(BATCH=2, IN_CHANNELS=12, OUT_CHANNELS=12, GROUPS=3, HEIGHT=10, WIDTH=10, STRIDE=1)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=12, OUT_CHANNELS=24, GROUPS=3, HEIGHT=9, WIDTH=11, STRIDE=2),
    dict(BATCH=3, IN_CHANNELS=16, OUT_CHANNELS=16, GROUPS=2, HEIGHT=7, WIDTH=13, STRIDE=1),
]


def channel_shuffle(x, groups):
    b, c, h, w = x.shape
    return x.view(b, groups, c // groups, h, w).transpose(1, 2).reshape(b, c, h, w)


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, groups, stride):
        super().__init__()
        self.groups = groups
        self.stride = stride
        branch_out = out_channels - in_channels if stride == 2 else out_channels
        mid = out_channels // 4
        self.gconv1 = nn.Conv2d(in_channels, mid, 1, groups=groups, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.dw = nn.Conv2d(mid, mid, 3, stride=stride, padding=1, groups=mid, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.gconv2 = nn.Conv2d(mid, branch_out, 1, groups=groups, bias=False)
        self.bn3 = nn.BatchNorm2d(branch_out)

    def forward(self, x):
        out = F.relu(self.bn1(self.gconv1(x)))
        out = channel_shuffle(out, self.groups)
        out = self.bn2(self.dw(out))
        out = self.bn3(self.gconv2(out))
        if self.stride == 2:
            return F.relu(torch.cat([F.avg_pool2d(x, 3, stride=2, padding=1), out], dim=1))
        return F.relu(out + x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, GROUPS, STRIDE]
