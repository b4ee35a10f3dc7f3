"""Text-CNN feature extractor: 1D convolution over word embeddings, ReLU and a max over the sequence positions."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv1d", "relu", "global_maxpool", "max"]

BATCH = 128
EMBED_DIM = 300
NUM_FILTERS = 256
SEQ_LEN = 512
KERNEL_SIZE = 5

VARIANTS = [
    dict(BATCH=64, EMBED_DIM=512, NUM_FILTERS=384, SEQ_LEN=777, KERNEL_SIZE=3),
    dict(BATCH=256, EMBED_DIM=200, NUM_FILTERS=100, SEQ_LEN=301, KERNEL_SIZE=7),
]
SMALL = dict(BATCH=2, EMBED_DIM=8, NUM_FILTERS=6, SEQ_LEN=40)
SMALL_VARIANTS = [
    dict(BATCH=3, EMBED_DIM=7, NUM_FILTERS=5, SEQ_LEN=33, KERNEL_SIZE=3),
    dict(BATCH=5, EMBED_DIM=12, NUM_FILTERS=9, SEQ_LEN=27, KERNEL_SIZE=7),
]


class Model(nn.Module):
    def __init__(self, embed_dim, num_filters, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(embed_dim, num_filters, kernel_size)

    def forward(self, x):
        # x: (batch, embed_dim, seq_len), embeddings already transposed to channels-first
        x = F.relu(self.conv(x))
        return torch.amax(x, dim=2)


def get_inputs():
    return [torch.randn(BATCH, EMBED_DIM, SEQ_LEN)]


def get_init_inputs():
    return [EMBED_DIM, NUM_FILTERS, KERNEL_SIZE]
