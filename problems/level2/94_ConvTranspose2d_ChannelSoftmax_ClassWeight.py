"""Segmentation upsampling head: 4x4 stride-2 transposed convolution to class logits, softmax over classes and a learned per-class weight."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose2d", "softmax", "scale"]

BATCH = 32
IN_CHANNELS = 256
NUM_CLASSES = 21
HEIGHT = 64
WIDTH = 64

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=192, NUM_CLASSES=150, HEIGHT=45, WIDTH=61),
    dict(BATCH=8, IN_CHANNELS=512, NUM_CLASSES=19, HEIGHT=97, WIDTH=97),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, NUM_CLASSES=5, HEIGHT=6, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=7, NUM_CLASSES=9, HEIGHT=5, WIDTH=7),
    dict(BATCH=2, IN_CHANNELS=6, NUM_CLASSES=3, HEIGHT=9, WIDTH=4),
]


class Model(nn.Module):
    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, num_classes, 4, stride=2, padding=1)
        # each output pixel sums in_channels * 2 * 2 taps: give the logits a std of about 2.5
        nn.init.normal_(self.deconv.weight, std=2.5 / math.sqrt(4 * in_channels))
        self.class_weight = nn.Parameter(0.5 + torch.rand(num_classes, 1, 1))

    def forward(self, x):
        x = torch.softmax(self.deconv(x), dim=1)
        return x * self.class_weight


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, NUM_CLASSES]
