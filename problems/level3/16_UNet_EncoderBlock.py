"""U-Net encoder (down) block: 2x2 max-pool followed by two 3x3 conv+BatchNorm+ReLU layers that widen the channels."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "max_pool2d", "conv2d", "batchnorm", "relu", "unet"]

BATCH = 16
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 128
WIDTH = 128

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=128, OUT_CHANNELS=256, HEIGHT=97, WIDTH=131),
    dict(BATCH=10, IN_CHANNELS=32, OUT_CHANNELS=64, HEIGHT=255, WIDTH=241),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, OUT_CHANNELS=8, HEIGHT=16, WIDTH=16)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=5, OUT_CHANNELS=9, HEIGHT=17, WIDTH=13),
    dict(BATCH=1, IN_CHANNELS=3, OUT_CHANNELS=7, HEIGHT=21, WIDTH=23),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        x = F.max_pool2d(x, 2)
        x = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
