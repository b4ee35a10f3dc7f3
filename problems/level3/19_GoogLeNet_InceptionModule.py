"""GoogLeNet inception module: four parallel branches (1x1 conv; 1x1 reduce then 3x3 conv; 1x1 reduce then 5x5 conv; 3x3 max-pool then 1x1 projection), each conv followed by BatchNorm and ReLU, concatenated along channels."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "conv2d", "batchnorm", "relu", "max_pool2d", "concat", "inception"]

BATCH = 64
IN_CHANNELS = 192
CH1X1 = 64
CH3X3_REDUCE = 96
CH3X3 = 128
CH5X5_REDUCE = 16
CH5X5 = 32
POOL_PROJ = 32
HEIGHT = 28
WIDTH = 28

VARIANTS = [
    dict(BATCH=96, IN_CHANNELS=480, CH1X1=192, CH3X3_REDUCE=96, CH3X3=208, CH5X5_REDUCE=16, CH5X5=48, POOL_PROJ=64, HEIGHT=15, WIDTH=15),
    dict(BATCH=37, IN_CHANNELS=256, CH1X1=128, CH3X3_REDUCE=128, CH3X3=192, CH5X5_REDUCE=32, CH5X5=96, POOL_PROJ=64, HEIGHT=27, WIDTH=31),
]
SMALL = dict(BATCH=2, IN_CHANNELS=12, CH1X1=4, CH3X3_REDUCE=6, CH3X3=8, CH5X5_REDUCE=2, CH5X5=4, POOL_PROJ=4, HEIGHT=10, WIDTH=10)
SMALL_VARIANTS = [
    dict(BATCH=3, IN_CHANNELS=11, CH1X1=5, CH3X3_REDUCE=7, CH3X3=9, CH5X5_REDUCE=3, CH5X5=5, POOL_PROJ=3, HEIGHT=9, WIDTH=7),
    dict(BATCH=2, IN_CHANNELS=15, CH1X1=3, CH3X3_REDUCE=5, CH3X3=6, CH5X5_REDUCE=4, CH5X5=7, POOL_PROJ=5, HEIGHT=11, WIDTH=13),
]


class ConvBNReLU(nn.Module):
    def __init__(self, cin, cout, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size, padding=kernel_size // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Model(nn.Module):
    def __init__(self, in_channels, ch1x1, ch3x3_reduce, ch3x3, ch5x5_reduce, ch5x5, pool_proj):
        super().__init__()
        self.branch1 = ConvBNReLU(in_channels, ch1x1, 1)
        self.branch2 = nn.Sequential(ConvBNReLU(in_channels, ch3x3_reduce, 1), ConvBNReLU(ch3x3_reduce, ch3x3, 3))
        self.branch3 = nn.Sequential(ConvBNReLU(in_channels, ch5x5_reduce, 1), ConvBNReLU(ch5x5_reduce, ch5x5, 5))
        self.branch4 = ConvBNReLU(in_channels, pool_proj, 1)

    def forward(self, x):
        b1 = self.branch1(x)
        b2 = self.branch2(x)
        b3 = self.branch3(x)
        b4 = self.branch4(F.max_pool2d(x, kernel_size=3, stride=1, padding=1))
        return torch.cat([b1, b2, b3, b4], dim=1)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, CH1X1, CH3X3_REDUCE, CH3X3, CH5X5_REDUCE, CH5X5, POOL_PROJ]
