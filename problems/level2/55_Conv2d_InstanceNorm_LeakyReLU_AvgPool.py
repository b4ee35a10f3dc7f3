"""PatchGAN-style 4x4 stride-2 convolution, instance normalization, LeakyReLU(0.2) and 2x2 average pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "instancenorm", "leaky_relu", "avgpool"]

BATCH = 16
IN_CHANNELS = 128
OUT_CHANNELS = 256
HEIGHT = 128
WIDTH = 128
NEGATIVE_SLOPE = 0.2

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=64, OUT_CHANNELS=128, HEIGHT=191, WIDTH=191),
    dict(BATCH=24, IN_CHANNELS=96, OUT_CHANNELS=200, HEIGHT=99, WIDTH=131),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=6, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=3, OUT_CHANNELS=5, HEIGHT=13, WIDTH=11),
    dict(BATCH=2, IN_CHANNELS=5, OUT_CHANNELS=7, HEIGHT=10, WIDTH=15),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, negative_slope):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 4, stride=2, padding=1, bias=False)
        self.negative_slope = negative_slope

    def forward(self, x):
        x = self.conv(x)
        x = F.instance_norm(x, eps=1e-5)
        x = F.leaky_relu(x, self.negative_slope)
        return F.avg_pool2d(x, 2)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, NEGATIVE_SLOPE]
