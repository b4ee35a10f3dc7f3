"""EfficientNet-style classifier head: a 1x1 conv that widens the final feature map, BatchNorm and SiLU, global average pooling and a linear classifier."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv2d", "batchnorm", "silu", "adaptive_avg_pool2d", "linear", "gemm", "classifier_head"]

BATCH = 64
IN_CHANNELS = 448
HEAD_CHANNELS = 1792
HEIGHT = 12
WIDTH = 12
NUM_CLASSES = 1000

VARIANTS = [
    dict(BATCH=256, IN_CHANNELS=320, HEAD_CHANNELS=1280, HEIGHT=7, WIDTH=7, NUM_CLASSES=1000),
    dict(BATCH=50, IN_CHANNELS=384, HEAD_CHANNELS=1536, HEIGHT=15, WIDTH=13, NUM_CLASSES=365),
]
SMALL = dict(BATCH=2, IN_CHANNELS=16, HEAD_CHANNELS=32, HEIGHT=7, WIDTH=7, NUM_CLASSES=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=13, HEAD_CHANNELS=45, HEIGHT=5, WIDTH=7, NUM_CLASSES=11),
    dict(BATCH=2, IN_CHANNELS=21, HEAD_CHANNELS=27, HEIGHT=9, WIDTH=9, NUM_CLASSES=7),
]


class Model(nn.Module):
    def __init__(self, in_channels, head_channels, num_classes):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, head_channels, 1, bias=False)
        self.bn = nn.BatchNorm2d(head_channels)
        self.fc = nn.Linear(head_channels, num_classes)

    def forward(self, x):
        x = F.silu(self.bn(self.conv(x)))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


def get_inputs():
    # Per-sample, per-channel offsets (as in real final feature maps) make the pooled features,
    # and so the logits, differ clearly between samples.
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH) + torch.randn(BATCH, IN_CHANNELS, 1, 1)]


def get_init_inputs():
    return [IN_CHANNELS, HEAD_CHANNELS, NUM_CLASSES]
