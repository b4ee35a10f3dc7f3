"""Volumetric patch-expanding layer: 2x2x2 stride-2 transposed convolution, layer normalization over the channel dimension at every voxel and exact GELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose3d", "layernorm", "gelu"]

BATCH = 4
IN_CHANNELS = 256
OUT_CHANNELS = 128
DEPTH = 20
HEIGHT = 20
WIDTH = 20
EPS = 1e-5

VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=384, OUT_CHANNELS=192, DEPTH=14, HEIGHT=21, WIDTH=21),
    dict(BATCH=8, IN_CHANNELS=96, OUT_CHANNELS=48, DEPTH=25, HEIGHT=23, WIDTH=31),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=6, DEPTH=3, HEIGHT=4, WIDTH=4)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, DEPTH=3, HEIGHT=5, WIDTH=3),
    dict(BATCH=2, IN_CHANNELS=9, OUT_CHANNELS=5, DEPTH=2, HEIGHT=3, WIDTH=5),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, eps):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_channels, out_channels, 2, stride=2)
        self.norm = nn.LayerNorm(out_channels, eps=eps)
        with torch.no_grad():
            self.norm.weight.add_(0.2 * torch.randn(out_channels))
            self.norm.bias.add_(0.2 * torch.randn(out_channels))

    def forward(self, x):
        x = self.deconv(x)
        x = self.norm(x.permute(0, 2, 3, 4, 1)).permute(0, 4, 1, 2, 3)
        return F.gelu(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, EPS]
