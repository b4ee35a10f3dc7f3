"""DenseNet dense block: each layer applies BatchNorm-ReLU-1x1 conv (bottleneck) then BatchNorm-ReLU-3x3 conv and concatenates its new feature maps to all previous ones."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "batchnorm", "relu", "conv2d", "concat", "densenet"]

BATCH = 16
IN_CHANNELS = 64
GROWTH_RATE = 32
NUM_LAYERS = 6
BN_SIZE = 4
HEIGHT = 56
WIDTH = 56

VARIANTS = [
    dict(BATCH=24, IN_CHANNELS=128, GROWTH_RATE=32, NUM_LAYERS=12, BN_SIZE=4, HEIGHT=27, WIDTH=29),
    dict(BATCH=9, IN_CHANNELS=96, GROWTH_RATE=48, NUM_LAYERS=5, BN_SIZE=2, HEIGHT=63, WIDTH=57),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, GROWTH_RATE=4, NUM_LAYERS=4, BN_SIZE=2, HEIGHT=12, WIDTH=12)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=6, GROWTH_RATE=5, NUM_LAYERS=3, BN_SIZE=3, HEIGHT=11, WIDTH=9),
    dict(BATCH=3, IN_CHANNELS=9, GROWTH_RATE=3, NUM_LAYERS=5, BN_SIZE=4, HEIGHT=7, WIDTH=13),
]


class DenseLayer(nn.Module):
    def __init__(self, cin, growth_rate, bn_size):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, bn_size * growth_rate, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, 3, padding=1, bias=False)

    def forward(self, features):
        out = self.conv1(F.relu(self.bn1(features)))
        return self.conv2(F.relu(self.bn2(out)))


class Model(nn.Module):
    def __init__(self, in_channels, growth_rate, num_layers, bn_size):
        super().__init__()
        self.layers = nn.ModuleList(
            DenseLayer(in_channels + i * growth_rate, growth_rate, bn_size) for i in range(num_layers)
        )

    def forward(self, x):
        features = x
        for layer in self.layers:
            features = torch.cat([features, layer(features)], dim=1)
        return features


def get_inputs():
    # Per-channel scales and offsets, as in real feature maps, so the batch statistics matter.
    scale = 0.5 + 1.5 * torch.rand(1, IN_CHANNELS, 1, 1)
    shift = 0.5 * torch.randn(1, IN_CHANNELS, 1, 1)
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH) * scale + shift]


def get_init_inputs():
    return [IN_CHANNELS, GROWTH_RATE, NUM_LAYERS, BN_SIZE]
