"""DenseNet transition layer: BatchNorm, ReLU, a 1x1 convolution that compresses the channels, and 2x2 average pooling that halves the resolution."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "batchnorm", "relu", "conv2d", "avg_pool2d", "densenet"]

BATCH = 64
IN_CHANNELS = 256
OUT_CHANNELS = 128
HEIGHT = 56
WIDTH = 56

VARIANTS = [
    dict(BATCH=96, IN_CHANNELS=1024, OUT_CHANNELS=512, HEIGHT=15, WIDTH=15),
    dict(BATCH=80, IN_CHANNELS=513, OUT_CHANNELS=256, HEIGHT=27, WIDTH=31),
]
SMALL = dict(BATCH=2, IN_CHANNELS=16, OUT_CHANNELS=8, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=13, OUT_CHANNELS=7, HEIGHT=9, WIDTH=11),
    dict(BATCH=2, IN_CHANNELS=22, OUT_CHANNELS=11, HEIGHT=15, WIDTH=7),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(in_channels)
        self.conv = nn.Conv2d(in_channels, out_channels, 1, bias=False)

    def forward(self, x):
        return F.avg_pool2d(self.conv(F.relu(self.bn(x))), kernel_size=2, stride=2)


def get_inputs():
    # Per-channel scales and offsets, as in real feature maps, so the batch statistics matter.
    scale = 0.5 + 1.5 * torch.rand(1, IN_CHANNELS, 1, 1)
    shift = 0.5 * torch.randn(1, IN_CHANNELS, 1, 1)
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH) * scale + shift]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
