"""LeNet-5 style digit classifier: two conv+ReLU+max-pool stages followed by three fully connected layers, on a large batch of small images."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv2d", "relu", "max_pool2d", "linear", "gemm", "lenet"]

BATCH = 16384
IN_CHANNELS = 1
IMAGE_SIZE = 32
CONV1_CHANNELS = 6
CONV2_CHANNELS = 16
FC1 = 120
FC2 = 84
NUM_CLASSES = 10

VARIANTS = [
    dict(BATCH=12001, IN_CHANNELS=3, IMAGE_SIZE=36, CONV1_CHANNELS=6, CONV2_CHANNELS=16, FC1=120, FC2=84, NUM_CLASSES=10),
    dict(BATCH=20000, IN_CHANNELS=1, IMAGE_SIZE=29, CONV1_CHANNELS=10, CONV2_CHANNELS=20, FC1=150, FC2=90, NUM_CLASSES=47),
]
SMALL = dict(BATCH=2, IN_CHANNELS=1, IMAGE_SIZE=32, CONV1_CHANNELS=6, CONV2_CHANNELS=16, FC1=120, FC2=84, NUM_CLASSES=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=3, IMAGE_SIZE=21, CONV1_CHANNELS=5, CONV2_CHANNELS=7, FC1=31, FC2=19, NUM_CLASSES=9),
    dict(BATCH=1, IN_CHANNELS=1, IMAGE_SIZE=29, CONV1_CHANNELS=3, CONV2_CHANNELS=11, FC1=45, FC2=23, NUM_CLASSES=13),
]


class Model(nn.Module):
    def __init__(self, in_channels, image_size, conv1_channels, conv2_channels, fc1, fc2, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, conv1_channels, kernel_size=5)
        self.conv2 = nn.Conv2d(conv1_channels, conv2_channels, kernel_size=5)
        side = ((image_size - 4) // 2 - 4) // 2
        self.fc1 = nn.Linear(conv2_channels * side * side, fc1)
        self.fc2 = nn.Linear(fc1, fc2)
        self.fc3 = nn.Linear(fc2, num_classes)
        for m in (self.conv1, self.conv2, self.fc1, self.fc2):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, IMAGE_SIZE, IMAGE_SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, IMAGE_SIZE, CONV1_CHANNELS, CONV2_CHANNELS, FC1, FC2, NUM_CLASSES]
