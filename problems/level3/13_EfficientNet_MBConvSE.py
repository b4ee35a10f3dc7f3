"""EfficientNet MBConv block: 1x1 expansion conv+BN+SiLU, kxk depthwise conv+BN+SiLU, squeeze-and-excitation channel gating, 1x1 projection conv+BN, and an identity shortcut when the shape is preserved."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv2d", "depthwise_conv2d", "batchnorm", "silu", "squeeze_excitation", "sigmoid", "adaptive_avg_pool2d", "residual", "efficientnet"]

BATCH = 48
IN_CHANNELS = 40
OUT_CHANNELS = 40
EXPAND_RATIO = 6
KERNEL_SIZE = 5
SE_RATIO = 0.25
HEIGHT = 56
WIDTH = 56
STRIDE = 1

VARIANTS = [
    dict(BATCH=32, IN_CHANNELS=80, OUT_CHANNELS=112, EXPAND_RATIO=6, KERNEL_SIZE=5, SE_RATIO=0.25, HEIGHT=29, WIDTH=29, STRIDE=1),
    dict(BATCH=40, IN_CHANNELS=24, OUT_CHANNELS=40, EXPAND_RATIO=6, KERNEL_SIZE=3, SE_RATIO=0.25, HEIGHT=75, WIDTH=83, STRIDE=2),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=8, EXPAND_RATIO=4, KERNEL_SIZE=5, SE_RATIO=0.25, HEIGHT=12, WIDTH=12, STRIDE=1)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=10, EXPAND_RATIO=6, KERNEL_SIZE=3, SE_RATIO=0.25, HEIGHT=13, WIDTH=11, STRIDE=2),
    dict(BATCH=3, IN_CHANNELS=9, OUT_CHANNELS=9, EXPAND_RATIO=3, KERNEL_SIZE=5, SE_RATIO=0.5, HEIGHT=9, WIDTH=7, STRIDE=1),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, expand_ratio, kernel_size, se_ratio, stride):
        super().__init__()
        hidden = in_channels * expand_ratio
        squeeze = max(1, int(in_channels * se_ratio))
        self.use_residual = stride == 1 and in_channels == out_channels
        self.expand = nn.Conv2d(in_channels, hidden, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(hidden)
        self.dw = nn.Conv2d(hidden, hidden, kernel_size, stride=stride, padding=kernel_size // 2, groups=hidden, bias=False)
        self.bn2 = nn.BatchNorm2d(hidden)
        self.se_reduce = nn.Conv2d(hidden, squeeze, 1)
        self.se_expand = nn.Conv2d(squeeze, hidden, 1)
        self.project = nn.Conv2d(hidden, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        out = F.silu(self.bn1(self.expand(x)))
        out = F.silu(self.bn2(self.dw(out)))
        gate = F.adaptive_avg_pool2d(out, 1)
        gate = torch.sigmoid(self.se_expand(F.silu(self.se_reduce(gate))))
        out = self.bn3(self.project(out * gate))
        if self.use_residual:
            out = out + x
        return out


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, EXPAND_RATIO, KERNEL_SIZE, SE_RATIO, STRIDE]
