"""Global-context (GCNet) attention pooling: a 1x1 convolution to one attention logit per pixel, softmax over all spatial positions, and the attention-weighted sum of the feature map per channel."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "pointwise", "softmax", "bmm", "sum", "attention_pooling"]

BATCH = 256
CHANNELS = 256
HEIGHT = 56
WIDTH = 56

VARIANTS = [
    dict(BATCH=128, CHANNELS=1024, HEIGHT=29, WIDTH=31),
    dict(BATCH=96, CHANNELS=512, HEIGHT=57, WIDTH=43),
]
SMALL = dict(BATCH=2, CHANNELS=8, HEIGHT=5, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=5, HEIGHT=7, WIDTH=3),
    dict(BATCH=1, CHANNELS=12, HEIGHT=4, WIDTH=9),
]


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv_mask = nn.Conv2d(channels, 1, kernel_size=1)
        # trained-magnitude attention weights so the spatial softmax is peaked, not uniform
        nn.init.normal_(self.conv_mask.weight, std=3.0 / channels ** 0.5)

    def forward(self, x):
        n, c, h, w = x.shape
        logits = self.conv_mask(x).view(n, h * w, 1)
        attn = F.softmax(logits, dim=1)
        return torch.bmm(x.view(n, c, h * w), attn).squeeze(-1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
