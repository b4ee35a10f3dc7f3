"""Standard 1D convolution (with bias, no padding) over a batch of multi-channel sequences."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv1d", "convolution"]

BATCH = 32
IN_CHANNELS = 128
OUT_CHANNELS = 256
LENGTH = 4096
KERNEL_SIZE = 3

VARIANTS = [
    dict(BATCH=17, IN_CHANNELS=96, OUT_CHANNELS=200, LENGTH=8191, KERNEL_SIZE=5),
    dict(BATCH=64, IN_CHANNELS=257, OUT_CHANNELS=129, LENGTH=2001, KERNEL_SIZE=3),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, OUT_CHANNELS=12, LENGTH=64, KERNEL_SIZE=3)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=5, OUT_CHANNELS=7, LENGTH=37, KERNEL_SIZE=5),
    dict(BATCH=1, IN_CHANNELS=11, OUT_CHANNELS=9, LENGTH=101, KERNEL_SIZE=3),
]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]
