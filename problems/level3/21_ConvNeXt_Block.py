"""ConvNeXt block: 7x7 depthwise conv, channels-last LayerNorm, an inverted-bottleneck MLP (Linear 4x, GELU, Linear), per-channel layer scale, and a residual connection."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "depthwise_conv2d", "layernorm", "linear", "gemm", "gelu", "layer_scale", "residual", "permute", "convnext"]

BATCH = 64
DIM = 192
MLP_RATIO = 4
HEIGHT = 28
WIDTH = 28
LAYER_SCALE_INIT = 1.0

VARIANTS = [
    dict(BATCH=32, DIM=96, MLP_RATIO=4, HEIGHT=57, WIDTH=57, LAYER_SCALE_INIT=1.0),
    dict(BATCH=96, DIM=384, MLP_RATIO=3, HEIGHT=13, WIDTH=15, LAYER_SCALE_INIT=1.0),
]
SMALL = dict(BATCH=2, DIM=16, MLP_RATIO=4, HEIGHT=10, WIDTH=10, LAYER_SCALE_INIT=1.0)
SMALL_VARIANTS = [
    dict(BATCH=3, DIM=13, MLP_RATIO=3, HEIGHT=9, WIDTH=11, LAYER_SCALE_INIT=1.0),
    dict(BATCH=1, DIM=21, MLP_RATIO=4, HEIGHT=15, WIDTH=7, LAYER_SCALE_INIT=1.0),
]


class Model(nn.Module):
    def __init__(self, dim, mlp_ratio, layer_scale_init):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.fc1 = nn.Linear(dim, mlp_ratio * dim)
        self.fc2 = nn.Linear(mlp_ratio * dim, dim)
        # Layer scale: ConvNeXt trains from 1e-6; a trained-looking value keeps the branch visible.
        self.gamma = nn.Parameter(torch.full((dim,), float(layer_scale_init)))

    def forward(self, x):
        y = self.dwconv(x)
        y = y.permute(0, 2, 3, 1)
        y = self.fc2(F.gelu(self.fc1(self.norm(y))))
        y = (self.gamma * y).permute(0, 3, 1, 2)
        return x + y


def get_inputs():
    return [torch.randn(BATCH, DIM, HEIGHT, WIDTH)]


def get_init_inputs():
    return [DIM, MLP_RATIO, LAYER_SCALE_INIT]
