"""MLP-Mixer block: a token-mixing GELU MLP applied across patches (on the transposed sequence) and a channel-mixing GELU MLP, each pre-normed with LayerNorm and residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["mlp_mixer", "gemm", "transpose", "layernorm", "gelu", "residual"]

BATCH = 32
NUM_PATCHES = 196
CHANNELS = 768
TOKEN_MLP_DIM = 384
CHANNEL_MLP_DIM = 3072

VARIANTS = [
    dict(BATCH=64, NUM_PATCHES=64, CHANNELS=512, TOKEN_MLP_DIM=256, CHANNEL_MLP_DIM=2048),
    dict(BATCH=13, NUM_PATCHES=441, CHANNELS=1000, TOKEN_MLP_DIM=500, CHANNEL_MLP_DIM=3001),
]
SMALL = dict(BATCH=2, NUM_PATCHES=16, CHANNELS=24, TOKEN_MLP_DIM=12, CHANNEL_MLP_DIM=48)
SMALL_VARIANTS = [
    dict(BATCH=1, NUM_PATCHES=9, CHANNELS=31, TOKEN_MLP_DIM=7, CHANNEL_MLP_DIM=61),
    dict(BATCH=3, NUM_PATCHES=25, CHANNELS=17, TOKEN_MLP_DIM=13, CHANNEL_MLP_DIM=35),
]


class Model(nn.Module):
    def __init__(self, num_patches, channels, token_mlp_dim, channel_mlp_dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(channels, eps=1e-6)
        self.token_fc1 = nn.Linear(num_patches, token_mlp_dim)
        self.token_fc2 = nn.Linear(token_mlp_dim, num_patches)
        self.norm2 = nn.LayerNorm(channels, eps=1e-6)
        self.channel_fc1 = nn.Linear(channels, channel_mlp_dim)
        self.channel_fc2 = nn.Linear(channel_mlp_dim, channels)

    def forward(self, x):
        # x: (batch, num_patches, channels)
        y = self.norm1(x).transpose(1, 2)                                # (batch, channels, patches)
        y = self.token_fc2(F.gelu(self.token_fc1(y))).transpose(1, 2)
        x = x + y
        x = x + self.channel_fc2(F.gelu(self.channel_fc1(self.norm2(x))))
        return x


def get_inputs():
    return [torch.randn(BATCH, NUM_PATCHES, CHANNELS)]


def get_init_inputs():
    return [NUM_PATCHES, CHANNELS, TOKEN_MLP_DIM, CHANNEL_MLP_DIM]
