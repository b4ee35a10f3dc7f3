"""Instance normalisation (per sample and channel, over the spatial dimensions) of a batch of images, with a learned affine."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["instancenorm", "normalization", "reduction"]

BATCH = 32
CHANNELS = 128
HEIGHT = 128
WIDTH = 128
EPS = 1e-5

VARIANTS = [
    dict(BATCH=12, CHANNELS=64, HEIGHT=255, WIDTH=257),
    dict(BATCH=48, CHANNELS=257, HEIGHT=63, WIDTH=65),
]
SMALL = dict(BATCH=2, CHANNELS=8, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=5, HEIGHT=9, WIDTH=11),
    dict(BATCH=1, CHANNELS=7, HEIGHT=15, WIDTH=13),
]


class Model(nn.Module):
    def __init__(self, channels, eps):
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels, eps=eps, affine=True)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(channels))
            self.norm.bias.copy_(0.2 * torch.randn(channels))

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    # each image channel gets its own offset so the mean subtraction matters
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 1.5
    return [x + torch.randn(BATCH, CHANNELS, 1, 1)]


def get_init_inputs():
    return [CHANNELS, EPS]
