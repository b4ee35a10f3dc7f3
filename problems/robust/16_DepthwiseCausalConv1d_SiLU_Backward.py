"""Depthwise causal 1D convolution with bias (Mamba-style short conv over the sequence) followed by SiLU; output and all gradients are judged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["conv1d", "depthwise", "causal", "bias", "silu"]

BATCH = 8
CHANNELS = 3072
SEQ_LEN = 2048
KERNEL_SIZE = 4

VARIANTS = [
    dict(BATCH=4, CHANNELS=1536, SEQ_LEN=4095, KERNEL_SIZE=4),
    dict(BATCH=16, CHANNELS=1000, SEQ_LEN=1537, KERNEL_SIZE=3),
]
SMALL = dict(BATCH=2, CHANNELS=32, SEQ_LEN=64, KERNEL_SIZE=4)
SMALL_VARIANTS = [
    dict(BATCH=3, CHANNELS=17, SEQ_LEN=33, KERNEL_SIZE=3),
    dict(BATCH=1, CHANNELS=45, SEQ_LEN=71, KERNEL_SIZE=5),
]


class Model(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.kernel_size = kernel_size
        self.conv = nn.Conv1d(channels, channels, kernel_size, groups=channels, bias=True)

    def forward(self, x):
        # Left-pad by kernel_size - 1: output position t sees inputs t-k+1 .. t only.
        x = F.pad(x, (self.kernel_size - 1, 0))
        return F.silu(self.conv(x))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SEQ_LEN)]


def get_init_inputs():
    return [CHANNELS, KERNEL_SIZE]
