"""A small U-Net for dense segmentation: a double-conv stem, max-pool encoder stages, transposed-conv decoder stages with skip concatenation, and a 1x1 conv to per-pixel class logits."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv2d", "batchnorm", "relu", "max_pool2d", "conv_transpose2d", "pad", "concat", "unet", "segmentation"]

BATCH = 4
IN_CHANNELS = 3
IMAGE_HEIGHT = 256
IMAGE_WIDTH = 256
CHANNELS = [32, 64, 128, 256]
NUM_CLASSES = 5

VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=1, IMAGE_HEIGHT=321, IMAGE_WIDTH=257, CHANNELS=[32, 64, 128, 256, 512], NUM_CLASSES=3),
    dict(BATCH=7, IN_CHANNELS=3, IMAGE_HEIGHT=199, IMAGE_WIDTH=161, CHANNELS=[24, 48, 96], NUM_CLASSES=21),
]
SMALL = dict(BATCH=1, IN_CHANNELS=3, IMAGE_HEIGHT=24, IMAGE_WIDTH=24, CHANNELS=[4, 8, 16], NUM_CLASSES=3)
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=1, IMAGE_HEIGHT=19, IMAGE_WIDTH=23, CHANNELS=[3, 6, 10], NUM_CLASSES=2),
    dict(BATCH=1, IN_CHANNELS=3, IMAGE_HEIGHT=15, IMAGE_WIDTH=13, CHANNELS=[5, 9], NUM_CLASSES=4),
]


class DoubleConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(x)))


class Up(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cout, kernel_size=2, stride=2)
        self.conv = DoubleConv(2 * cout, cout)

    def forward(self, x, skip):
        x = self.up(x)
        dh = skip.shape[2] - x.shape[2]
        dw = skip.shape[3] - x.shape[3]
        x = F.pad(x, [dw // 2, dw - dw // 2, dh // 2, dh - dh // 2])
        return self.conv(torch.cat([skip, x], dim=1))


class Model(nn.Module):
    def __init__(self, in_channels, channels, num_classes):
        super().__init__()
        self.stem = DoubleConv(in_channels, channels[0])
        self.downs = nn.ModuleList(DoubleConv(a, b) for a, b in zip(channels[:-1], channels[1:]))
        self.ups = nn.ModuleList(Up(b, a) for a, b in reversed(list(zip(channels[:-1], channels[1:]))))
        self.head = nn.Conv2d(channels[0], num_classes, 1)

    def forward(self, x):
        x = self.stem(x)
        skips = []
        for down in self.downs:
            skips.append(x)
            x = down(F.max_pool2d(x, 2))
        for up in self.ups:
            x = up(x, skips.pop())
        return self.head(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, IMAGE_HEIGHT, IMAGE_WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, CHANNELS, NUM_CLASSES]
