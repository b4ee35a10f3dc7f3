"""Same-padded 3x3x3 convolution producing per-voxel class logits, softmax over the channel dimension and 2x2x2 max pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv3d", "softmax", "maxpool"]

BATCH = 4
IN_CHANNELS = 32
NUM_CLASSES = 32
DEPTH = 32
HEIGHT = 64
WIDTH = 64

VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=48, NUM_CLASSES=14, DEPTH=45, HEIGHT=75, WIDTH=75),
    dict(BATCH=8, IN_CHANNELS=24, NUM_CLASSES=105, DEPTH=16, HEIGHT=39, WIDTH=57),
]
SMALL = dict(BATCH=2, IN_CHANNELS=3, NUM_CLASSES=6, DEPTH=6, HEIGHT=6, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=4, NUM_CLASSES=5, DEPTH=5, HEIGHT=7, WIDTH=6),
    dict(BATCH=2, IN_CHANNELS=5, NUM_CLASSES=9, DEPTH=4, HEIGHT=5, WIDTH=9),
]


class Model(nn.Module):
    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, num_classes, 3, padding=1)

    def forward(self, x):
        x = torch.softmax(self.conv(x), dim=1)
        return F.max_pool3d(x, 2)


def get_inputs():
    # scaled so the logits have a standard deviation of about 2.5
    return [4.0 * torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, NUM_CLASSES]
