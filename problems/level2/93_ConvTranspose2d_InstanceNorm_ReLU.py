"""CycleGAN-style upsampling block: 3x3 stride-2 transposed convolution (output padding 1), instance normalization and ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv_transpose2d", "instancenorm", "relu"]

BATCH = 32
IN_CHANNELS = 128
OUT_CHANNELS = 64
HEIGHT = 96
WIDTH = 96

VARIANTS = [
    dict(BATCH=16, IN_CHANNELS=256, OUT_CHANNELS=128, HEIGHT=67, WIDTH=67),
    dict(BATCH=8, IN_CHANNELS=96, OUT_CHANNELS=48, HEIGHT=127, WIDTH=191),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=4, HEIGHT=6, WIDTH=6)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=7, OUT_CHANNELS=5, HEIGHT=5, WIDTH=7),
    dict(BATCH=2, IN_CHANNELS=6, OUT_CHANNELS=3, HEIGHT=9, WIDTH=4),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, 3, stride=2, padding=1, output_padding=1, bias=False)

    def forward(self, x):
        x = F.instance_norm(self.deconv(x), eps=1e-5)
        return F.relu(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
