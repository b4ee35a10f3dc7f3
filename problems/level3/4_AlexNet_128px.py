"""AlexNet-style classifier on 128x128 images: five convolutions (11x11 stride-4 stem) with ReLU and overlapping max-pools, adaptive average pooling and a three-layer fully connected classifier."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv2d", "relu", "max_pool2d", "adaptive_avg_pool2d", "linear", "gemm", "alexnet"]

BATCH = 64
IMAGE_SIZE = 128
CHANNELS = [64, 192, 384, 256, 256]
POOL_SIZE = 3
FC_DIM = 4096
NUM_CLASSES = 1000

VARIANTS = [
    dict(BATCH=48, IMAGE_SIZE=151, CHANNELS=[64, 192, 384, 256, 256], POOL_SIZE=3, FC_DIM=2048, NUM_CLASSES=200),
    dict(BATCH=101, IMAGE_SIZE=99, CHANNELS=[48, 128, 192, 192, 160], POOL_SIZE=2, FC_DIM=3000, NUM_CLASSES=1000),
]
SMALL = dict(BATCH=1, IMAGE_SIZE=64, CHANNELS=[8, 12, 16, 12, 12], POOL_SIZE=2, FC_DIM=32, NUM_CLASSES=10)
SMALL_VARIANTS = [
    dict(BATCH=2, IMAGE_SIZE=71, CHANNELS=[5, 9, 13, 11, 7], POOL_SIZE=3, FC_DIM=27, NUM_CLASSES=7),
    dict(BATCH=1, IMAGE_SIZE=67, CHANNELS=[6, 10, 14, 10, 9], POOL_SIZE=2, FC_DIM=21, NUM_CLASSES=13),
]


class Model(nn.Module):
    def __init__(self, channels, pool_size, fc_dim, num_classes):
        super().__init__()
        c1, c2, c3, c4, c5 = channels
        self.conv1 = nn.Conv2d(3, c1, kernel_size=11, stride=4, padding=2)
        self.conv2 = nn.Conv2d(c1, c2, kernel_size=5, padding=2)
        self.conv3 = nn.Conv2d(c2, c3, kernel_size=3, padding=1)
        self.conv4 = nn.Conv2d(c3, c4, kernel_size=3, padding=1)
        self.conv5 = nn.Conv2d(c4, c5, kernel_size=3, padding=1)
        self.pool_size = pool_size
        self.fc1 = nn.Linear(c5 * pool_size * pool_size, fc_dim)
        self.fc2 = nn.Linear(fc_dim, fc_dim)
        self.fc3 = nn.Linear(fc_dim, num_classes)
        # He initialisation so that the un-normalised ReLU stack keeps a sensible activation scale.
        for m in (self.conv1, self.conv2, self.conv3, self.conv4, self.conv5, self.fc1, self.fc2):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), kernel_size=3, stride=2)
        x = F.max_pool2d(F.relu(self.conv2(x)), kernel_size=3, stride=2)
        x = F.relu(self.conv3(x))
        x = F.relu(self.conv4(x))
        x = F.max_pool2d(F.relu(self.conv5(x)), kernel_size=3, stride=2)
        x = F.adaptive_avg_pool2d(x, self.pool_size)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def get_inputs():
    return [torch.randn(BATCH, 3, IMAGE_SIZE, IMAGE_SIZE)]


def get_init_inputs():
    return [CHANNELS, POOL_SIZE, FC_DIM, NUM_CLASSES]
