"""U-Net decoder (up) block: 2x2 stride-2 transposed conv upsampling, zero-padding to the skip connection's size, channel concatenation with the skip, then two 3x3 conv+BatchNorm+ReLU layers."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv_transpose2d", "pad", "concat", "conv2d", "batchnorm", "relu", "unet"]

BATCH = 16
IN_CHANNELS = 256
SKIP_CHANNELS = 128
OUT_CHANNELS = 128
SKIP_HEIGHT = 64
SKIP_WIDTH = 64

VARIANTS = [
    dict(BATCH=8, IN_CHANNELS=512, SKIP_CHANNELS=256, OUT_CHANNELS=256, SKIP_HEIGHT=49, SKIP_WIDTH=65),
    dict(BATCH=6, IN_CHANNELS=128, SKIP_CHANNELS=64, OUT_CHANNELS=64, SKIP_HEIGHT=127, SKIP_WIDTH=121),
]
SMALL = dict(BATCH=2, IN_CHANNELS=8, SKIP_CHANNELS=4, OUT_CHANNELS=4, SKIP_HEIGHT=16, SKIP_WIDTH=16)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=10, SKIP_CHANNELS=5, OUT_CHANNELS=6, SKIP_HEIGHT=15, SKIP_WIDTH=13),
    dict(BATCH=1, IN_CHANNELS=7, SKIP_CHANNELS=3, OUT_CHANNELS=5, SKIP_HEIGHT=21, SKIP_WIDTH=18),
]


class Model(nn.Module):
    def __init__(self, in_channels, skip_channels, out_channels):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
        self.conv1 = nn.Conv2d(in_channels // 2 + skip_channels, out_channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)

    def forward(self, x, skip):
        x = self.up(x)
        dh = skip.shape[2] - x.shape[2]
        dw = skip.shape[3] - x.shape[3]
        x = F.pad(x, [dw // 2, dw - dw // 2, dh // 2, dh - dh // 2])
        x = torch.cat([skip, x], dim=1)
        x = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(x)))


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, SKIP_HEIGHT // 2, SKIP_WIDTH // 2)
    skip = torch.randn(BATCH, SKIP_CHANNELS, SKIP_HEIGHT, SKIP_WIDTH)
    return [x, skip]


def get_init_inputs():
    return [IN_CHANNELS, SKIP_CHANNELS, OUT_CHANNELS]
