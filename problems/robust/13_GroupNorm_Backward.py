"""GroupNorm with learned per-channel scale and shift on an NCHW feature map; output and all gradients are judged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["groupnorm", "normalization"]

BATCH = 16
CHANNELS = 320
HEIGHT = 96
WIDTH = 96
NUM_GROUPS = 32
EPS = 1e-5

VARIANTS = [
    dict(BATCH=16, CHANNELS=512, HEIGHT=63, WIDTH=65, NUM_GROUPS=32, EPS=1e-5),
    dict(BATCH=96, CHANNELS=120, HEIGHT=57, WIDTH=57, NUM_GROUPS=24, EPS=1e-5),
]
SMALL = dict(BATCH=2, CHANNELS=16, HEIGHT=12, WIDTH=12, NUM_GROUPS=4, EPS=1e-5)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=15, HEIGHT=7, WIDTH=9, NUM_GROUPS=5, EPS=1e-5),
    dict(BATCH=1, CHANNELS=24, HEIGHT=13, WIDTH=11, NUM_GROUPS=3, EPS=1e-5),
]


class Model(nn.Module):
    def __init__(self, num_groups, channels, eps):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups, channels, eps=eps)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.2)
            self.norm.bias.normal_(0.0, 0.2)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    # Per-channel offsets and scales, so groups have different statistics.
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    scale = 0.5 + 2.0 * torch.rand(1, CHANNELS, 1, 1)
    shift = torch.randn(1, CHANNELS, 1, 1)
    return [x * scale + shift]


def get_init_inputs():
    return [NUM_GROUPS, CHANNELS, EPS]
