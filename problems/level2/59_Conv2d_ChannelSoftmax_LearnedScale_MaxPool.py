"""Same-padded 3x3 convolution producing class logits, softmax over channels, a learned per-class scale and 2x2 max pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "softmax", "scale", "maxpool"]

BATCH = 16
IN_CHANNELS = 128
NUM_CLASSES = 96
HEIGHT = 96
WIDTH = 96

VARIANTS = [
    dict(BATCH=12, IN_CHANNELS=64, NUM_CLASSES=150, HEIGHT=97, WIDTH=129),
    dict(BATCH=32, IN_CHANNELS=96, NUM_CLASSES=21, HEIGHT=127, WIDTH=95),
]
SMALL = dict(BATCH=2, IN_CHANNELS=4, NUM_CLASSES=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, NUM_CLASSES=7, HEIGHT=11, WIDTH=9),
    dict(BATCH=2, IN_CHANNELS=3, NUM_CLASSES=19, HEIGHT=8, WIDTH=13),
]


class Model(nn.Module):
    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, num_classes, 3, padding=1)
        self.class_scale = nn.Parameter(0.5 + torch.rand(num_classes, 1, 1))

    def forward(self, x):
        x = torch.softmax(self.conv(x), dim=1)
        x = x * self.class_scale
        return F.max_pool2d(x, 2)


def get_inputs():
    # scaled so the logits have a standard deviation of about 2.5
    return [4.0 * torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, NUM_CLASSES]
