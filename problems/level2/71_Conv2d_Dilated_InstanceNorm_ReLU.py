"""Dilated same-padded 3x3 convolution, affine instance normalization and ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "dilated", "instancenorm", "relu"]

BATCH = 16
IN_CHANNELS = 128
OUT_CHANNELS = 128
HEIGHT = 96
WIDTH = 96
DILATION = 2

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=96, OUT_CHANNELS=192, HEIGHT=127, WIDTH=101, DILATION=3),
    dict(BATCH=32, IN_CHANNELS=64, OUT_CHANNELS=72, HEIGHT=75, WIDTH=75, DILATION=4),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=11, WIDTH=9, DILATION=3),
    dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=6, HEIGHT=13, WIDTH=10, DILATION=4),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, dilation):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=dilation, dilation=dilation, bias=False)
        self.norm = nn.InstanceNorm2d(out_channels, affine=True)
        with torch.no_grad():
            self.norm.weight.add_(0.2 * torch.randn(out_channels))
            self.norm.bias.add_(0.2 * torch.randn(out_channels))

    def forward(self, x):
        return F.relu(self.norm(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, DILATION]
