"""DCGAN generator: a latent vector is projected to a 4x4 map by a transposed conv, then repeatedly upsampled 2x by 4x4 stride-2 transposed convs with BatchNorm and ReLU (halving the width each time), ending in a 3-channel tanh image."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv_transpose2d", "batchnorm", "relu", "tanh", "gan"]

BATCH = 128
LATENT_DIM = 100
BASE_CHANNELS = 64
NUM_UPSAMPLES = 4
OUT_CHANNELS = 3

VARIANTS = [
    dict(BATCH=96, LATENT_DIM=128, BASE_CHANNELS=48, NUM_UPSAMPLES=5, OUT_CHANNELS=3),
    dict(BATCH=320, LATENT_DIM=77, BASE_CHANNELS=80, NUM_UPSAMPLES=3, OUT_CHANNELS=1),
]
SMALL = dict(BATCH=2, LATENT_DIM=16, BASE_CHANNELS=4, NUM_UPSAMPLES=2, OUT_CHANNELS=3)
SMALL_VARIANTS = [
    dict(BATCH=3, LATENT_DIM=13, BASE_CHANNELS=3, NUM_UPSAMPLES=3, OUT_CHANNELS=1),
    dict(BATCH=2, LATENT_DIM=21, BASE_CHANNELS=5, NUM_UPSAMPLES=2, OUT_CHANNELS=3),
]


class Model(nn.Module):
    def __init__(self, latent_dim, base_channels, num_upsamples, out_channels):
        super().__init__()
        width = base_channels * 2 ** (num_upsamples - 1)
        self.project = nn.ConvTranspose2d(latent_dim, width, kernel_size=4, stride=1, padding=0, bias=False)
        self.project_bn = nn.BatchNorm2d(width)
        ups = []
        for _ in range(num_upsamples - 1):
            ups.append(nn.ConvTranspose2d(width, width // 2, kernel_size=4, stride=2, padding=1, bias=False))
            ups.append(nn.BatchNorm2d(width // 2))
            width //= 2
        self.ups = nn.ModuleList(ups)
        self.to_image = nn.ConvTranspose2d(width, out_channels, kernel_size=4, stride=2, padding=1, bias=False)

    def forward(self, z):
        x = F.relu(self.project_bn(self.project(z)))
        for i in range(0, len(self.ups), 2):
            x = F.relu(self.ups[i + 1](self.ups[i](x)))
        return torch.tanh(self.to_image(x))


def get_inputs():
    return [torch.randn(BATCH, LATENT_DIM, 1, 1)]


def get_init_inputs():
    return [LATENT_DIM, BASE_CHANNELS, NUM_UPSAMPLES, OUT_CHANNELS]
