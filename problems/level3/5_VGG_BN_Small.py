"""VGG-style classifier with batch norm: four blocks of stacked 3x3 conv+BatchNorm+ReLU each closed by a 2x2 max-pool, then global average pooling and a two-layer classifier."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv2d", "batchnorm", "relu", "max_pool2d", "adaptive_avg_pool2d", "linear", "gemm", "vgg"]

BATCH = 32
IMAGE_SIZE = 64
CHANNELS = [64, 128, 256, 512]
CONVS_PER_BLOCK = 2
FC_DIM = 512
NUM_CLASSES = 100

VARIANTS = [
    dict(BATCH=24, IMAGE_SIZE=75, CHANNELS=[48, 96, 192, 384], CONVS_PER_BLOCK=3, FC_DIM=1000, NUM_CLASSES=200),
    dict(BATCH=53, IMAGE_SIZE=48, CHANNELS=[64, 128, 320, 448], CONVS_PER_BLOCK=2, FC_DIM=777, NUM_CLASSES=10),
]
SMALL = dict(BATCH=2, IMAGE_SIZE=16, CHANNELS=[4, 8, 12], CONVS_PER_BLOCK=2, FC_DIM=16, NUM_CLASSES=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IMAGE_SIZE=19, CHANNELS=[5, 7, 11], CONVS_PER_BLOCK=2, FC_DIM=13, NUM_CLASSES=7),
    dict(BATCH=2, IMAGE_SIZE=13, CHANNELS=[3, 9], CONVS_PER_BLOCK=3, FC_DIM=11, NUM_CLASSES=5),
]


class ConvBNReLU(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Model(nn.Module):
    def __init__(self, channels, convs_per_block, fc_dim, num_classes):
        super().__init__()
        blocks = []
        cin = 3
        for cout in channels:
            layers = []
            for _ in range(convs_per_block):
                layers.append(ConvBNReLU(cin, cout))
                cin = cout
            blocks.append(nn.Sequential(*layers))
        self.blocks = nn.ModuleList(blocks)
        self.fc1 = nn.Linear(cin, fc_dim)
        self.fc2 = nn.Linear(fc_dim, num_classes)

    def forward(self, x):
        for block in self.blocks:
            x = F.max_pool2d(block(x), 2)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc2(F.relu(self.fc1(x)))


def get_inputs():
    return [torch.randn(BATCH, 3, IMAGE_SIZE, IMAGE_SIZE)]


def get_init_inputs():
    return [CHANNELS, CONVS_PER_BLOCK, FC_DIM, NUM_CLASSES]
