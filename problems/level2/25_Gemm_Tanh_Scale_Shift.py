"""Action-chunking policy head: linear to a chunk of future actions, tanh squashing, and affine rescaling of every action dimension into its [low, high] range."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "tanh", "scale", "shift", "broadcast"]

BATCH = 4096
HIDDEN = 2048
CHUNK = 100
ACTION_DIM = 14

VARIANTS = [
    dict(BATCH=16383, HIDDEN=1024, CHUNK=64, ACTION_DIM=26),
    dict(BATCH=8191, HIDDEN=1536, CHUNK=90, ACTION_DIM=9),
]
SMALL = dict(BATCH=16, HIDDEN=32, CHUNK=5, ACTION_DIM=3)
SMALL_VARIANTS = [
    dict(BATCH=5, HIDDEN=17, CHUNK=3, ACTION_DIM=7),
    dict(BATCH=23, HIDDEN=40, CHUNK=9, ACTION_DIM=2),
]


class Model(nn.Module):
    def __init__(self, hidden, chunk, action_dim):
        super().__init__()
        self.head = nn.Linear(hidden, chunk * action_dim)
        low = -0.5 - torch.rand(action_dim) * 2.0
        high = low + 0.5 + torch.rand(action_dim) * 3.0
        self.register_buffer("low", low)
        self.register_buffer("high", high)
        self.chunk = chunk
        self.action_dim = action_dim

    def forward(self, h):
        a = torch.tanh(self.head(h)).view(h.shape[0], self.chunk, self.action_dim)
        return self.low + (a + 1.0) * 0.5 * (self.high - self.low)


def get_inputs():
    return [torch.randn(BATCH, HIDDEN) * 2.0]


def get_init_inputs():
    return [HIDDEN, CHUNK, ACTION_DIM]
