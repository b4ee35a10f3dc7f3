"""Temporal convolutional network: a stack of residual blocks of two causal dilated conv1d layers with ReLU (dilation doubling per block, 1x1 conv on the skip path when widths differ), then a 1x1 conv readout."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["conv1d", "tcn", "dilated_conv", "causal_conv", "pad", "relu", "residual"]

BATCH = 16
IN_CHANNELS = 64
SEQ_LEN = 2048
HIDDEN_CHANNELS = 256
NUM_LEVELS = 6
KERNEL_SIZE = 3
OUT_CHANNELS = 64

VARIANTS = [
    dict(BATCH=5, IN_CHANNELS=40, SEQ_LEN=9001, HIDDEN_CHANNELS=192, NUM_LEVELS=8, KERNEL_SIZE=2, OUT_CHANNELS=10),
    dict(BATCH=64, IN_CHANNELS=128, SEQ_LEN=511, HIDDEN_CHANNELS=320, NUM_LEVELS=5, KERNEL_SIZE=5, OUT_CHANNELS=129),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, SEQ_LEN=16, HIDDEN_CHANNELS=16, NUM_LEVELS=3, KERNEL_SIZE=3, OUT_CHANNELS=4)
SMALL_VARIANTS = [
    dict(BATCH=1, IN_CHANNELS=5, SEQ_LEN=15, HIDDEN_CHANNELS=13, NUM_LEVELS=2, KERNEL_SIZE=2, OUT_CHANNELS=3),
    dict(BATCH=3, IN_CHANNELS=7, SEQ_LEN=11, HIDDEN_CHANNELS=19, NUM_LEVELS=3, KERNEL_SIZE=5, OUT_CHANNELS=6),
]


class TemporalBlock(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, dilation):
        super().__init__()
        self.pad = (kernel_size - 1) * dilation
        self.conv1 = nn.Conv1d(in_ch, out_ch, kernel_size, dilation=dilation)
        self.conv2 = nn.Conv1d(out_ch, out_ch, kernel_size, dilation=dilation)
        self.downsample = nn.Conv1d(in_ch, out_ch, 1) if in_ch != out_ch else None

    def forward(self, x):
        y = F.relu(self.conv1(F.pad(x, (self.pad, 0))))      # left padding only: causal
        y = F.relu(self.conv2(F.pad(y, (self.pad, 0))))
        res = x if self.downsample is None else self.downsample(x)
        return F.relu(y + res)


class Model(nn.Module):
    def __init__(self, in_channels, hidden_channels, num_levels, kernel_size, out_channels):
        super().__init__()
        blocks = []
        for i in range(num_levels):
            blocks.append(TemporalBlock(in_channels if i == 0 else hidden_channels, hidden_channels,
                                        kernel_size, 2 ** i))
        self.blocks = nn.Sequential(*blocks)
        self.readout = nn.Conv1d(hidden_channels, out_channels, 1)

    def forward(self, x):
        # x: (batch, in_channels, seq_len) -> (batch, out_channels, seq_len)
        return self.readout(self.blocks(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SEQ_LEN)]


def get_init_inputs():
    return [IN_CHANNELS, HIDDEN_CHANNELS, NUM_LEVELS, KERNEL_SIZE, OUT_CHANNELS]
