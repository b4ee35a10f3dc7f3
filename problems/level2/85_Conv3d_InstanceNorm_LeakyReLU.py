"""nnU-Net-style 3D block: same-padded 3x3x3 convolution, affine instance normalization and LeakyReLU(0.01)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv3d", "instancenorm", "leaky_relu"]

BATCH = 2
IN_CHANNELS = 32
OUT_CHANNELS = 64
DEPTH = 64
HEIGHT = 64
WIDTH = 64
STRIDE = 1
NEGATIVE_SLOPE = 0.01

VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=64, OUT_CHANNELS=128, DEPTH=57, HEIGHT=77, WIDTH=77, STRIDE=2),
    dict(BATCH=4, IN_CHANNELS=30, OUT_CHANNELS=30, DEPTH=40, HEIGHT=97, WIDTH=81),
]
SMALL = dict(BATCH=2, IN_CHANNELS=3, OUT_CHANNELS=6, DEPTH=6, HEIGHT=6, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=4, OUT_CHANNELS=5, DEPTH=7, HEIGHT=9, WIDTH=7, STRIDE=2),
    dict(BATCH=1, IN_CHANNELS=5, OUT_CHANNELS=7, DEPTH=5, HEIGHT=6, WIDTH=9),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, stride, negative_slope):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, stride=stride, padding=1)
        self.norm = nn.InstanceNorm3d(out_channels, eps=1e-5, affine=True)
        with torch.no_grad():
            self.norm.weight.add_(0.2 * torch.randn(out_channels))
            self.norm.bias.add_(0.2 * torch.randn(out_channels))
        self.negative_slope = negative_slope

    def forward(self, x):
        x = self.norm(self.conv(x))
        return F.leaky_relu(x, self.negative_slope)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, STRIDE, NEGATIVE_SLOPE]
