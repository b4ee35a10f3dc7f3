"""ResNet basic-block tail: same-padded 3x3 convolution, inference-mode batch normalization, addition of the identity branch and ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv2d", "batchnorm", "residual", "relu"]

BATCH = 32
CHANNELS = 256
HEIGHT = 28
WIDTH = 28
EPS = 1e-5

VARIANTS = [
    dict(BATCH=24, CHANNELS=192, HEIGHT=37, WIDTH=37),
    dict(BATCH=64, CHANNELS=96, HEIGHT=57, WIDTH=43),
]
SMALL = dict(BATCH=2, CHANNELS=8, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=7, HEIGHT=11, WIDTH=9),
    dict(BATCH=2, CHANNELS=5, HEIGHT=8, WIDTH=13),
]


class Model(nn.Module):
    def __init__(self, channels, eps):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn_weight = nn.Parameter(1.0 + 0.2 * torch.randn(channels))
        self.bn_bias = nn.Parameter(0.2 * torch.randn(channels))
        self.register_buffer("running_mean", 0.1 * torch.randn(channels))
        self.register_buffer("running_var", 0.2 + 0.3 * torch.rand(channels))
        self.eps = eps

    def forward(self, x, identity):
        out = self.conv(x)
        out = F.batch_norm(out, self.running_mean, self.running_var, self.bn_weight, self.bn_bias,
                           training=False, eps=self.eps)
        return F.relu(out + identity)


def get_inputs():
    x = torch.relu(torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH))
    identity = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, identity]


def get_init_inputs():
    return [CHANNELS, EPS]
