"""A small ResNet classifier: a 7x7 stride-2 conv stem with max-pool, stages of basic residual blocks (each later stage halves the resolution and widens), global average pooling and a linear classifier."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv2d", "batchnorm", "relu", "residual", "max_pool2d", "adaptive_avg_pool2d", "linear", "resnet"]

BATCH = 32
IMAGE_SIZE = 128
STEM_CHANNELS = 64
STAGE_CHANNELS = [64, 128, 256]
BLOCKS_PER_STAGE = 2
NUM_CLASSES = 1000

VARIANTS = [
    dict(BATCH=20, IMAGE_SIZE=161, STEM_CHANNELS=48, STAGE_CHANNELS=[48, 96, 192, 384], BLOCKS_PER_STAGE=2, NUM_CLASSES=100),
    dict(BATCH=45, IMAGE_SIZE=97, STEM_CHANNELS=64, STAGE_CHANNELS=[80, 160, 320], BLOCKS_PER_STAGE=3, NUM_CLASSES=37),
]
SMALL = dict(BATCH=2, IMAGE_SIZE=32, STEM_CHANNELS=4, STAGE_CHANNELS=[4, 8, 16], BLOCKS_PER_STAGE=1, NUM_CLASSES=10)
SMALL_VARIANTS = [
    dict(BATCH=2, IMAGE_SIZE=29, STEM_CHANNELS=5, STAGE_CHANNELS=[6, 11], BLOCKS_PER_STAGE=2, NUM_CLASSES=7),
    dict(BATCH=3, IMAGE_SIZE=23, STEM_CHANNELS=3, STAGE_CHANNELS=[5, 7, 9], BLOCKS_PER_STAGE=1, NUM_CLASSES=13),
]


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))
        else:
            self.shortcut = nn.Identity()

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class Model(nn.Module):
    def __init__(self, stem_channels, stage_channels, blocks_per_stage, num_classes):
        super().__init__()
        self.stem_conv = nn.Conv2d(3, stem_channels, 7, stride=2, padding=3, bias=False)
        self.stem_bn = nn.BatchNorm2d(stem_channels)
        blocks = []
        cin = stem_channels
        for i, cout in enumerate(stage_channels):
            for j in range(blocks_per_stage):
                stride = 2 if (i > 0 and j == 0) else 1
                blocks.append(BasicBlock(cin, cout, stride))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = F.relu(self.stem_bn(self.stem_conv(x)))
        x = F.max_pool2d(x, kernel_size=3, stride=2, padding=1)
        x = self.blocks(x)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


def get_inputs():
    return [torch.randn(BATCH, 3, IMAGE_SIZE, IMAGE_SIZE)]


def get_init_inputs():
    return [STEM_CHANNELS, STAGE_CHANNELS, BLOCKS_PER_STAGE, NUM_CLASSES]
