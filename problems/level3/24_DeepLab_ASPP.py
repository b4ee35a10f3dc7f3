"""DeepLabV3 atrous spatial pyramid pooling: a 1x1 conv branch, three dilated 3x3 conv branches and a global-pooling branch (upsampled back), concatenated and fused by a 1x1 conv, each conv followed by BatchNorm (except the pooled branch) and ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["cnn", "dilated_conv2d", "conv2d", "batchnorm", "relu", "adaptive_avg_pool2d", "interpolate", "concat", "aspp", "segmentation"]

BATCH = 4
IN_CHANNELS = 1024
OUT_CHANNELS = 256
HEIGHT = 32
WIDTH = 32
RATES = [6, 12, 18]

VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=2048, OUT_CHANNELS=256, HEIGHT=33, WIDTH=45, RATES=[6, 12, 18]),
    dict(BATCH=6, IN_CHANNELS=512, OUT_CHANNELS=192, HEIGHT=65, WIDTH=49, RATES=[12, 24, 36]),
]
SMALL = dict(BATCH=2, IN_CHANNELS=16, OUT_CHANNELS=8, HEIGHT=12, WIDTH=12, RATES=[1, 2, 3])
SMALL_VARIANTS = [
    dict(BATCH=2, IN_CHANNELS=13, OUT_CHANNELS=7, HEIGHT=11, WIDTH=9, RATES=[2, 4, 6]),
    dict(BATCH=3, IN_CHANNELS=10, OUT_CHANNELS=5, HEIGHT=7, WIDTH=13, RATES=[1, 3, 5]),
]


class ConvBNReLU(nn.Module):
    def __init__(self, cin, cout, kernel_size, dilation=1):
        super().__init__()
        pad = dilation * (kernel_size // 2)
        self.conv = nn.Conv2d(cin, cout, kernel_size, padding=pad, dilation=dilation, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, rates):
        super().__init__()
        self.branches = nn.ModuleList(
            [ConvBNReLU(in_channels, out_channels, 1)] + [ConvBNReLU(in_channels, out_channels, 3, r) for r in rates]
        )
        # The image-pooling branch sees one value per channel, so it uses a biased conv instead of BatchNorm.
        self.pool_conv = nn.Conv2d(in_channels, out_channels, 1)
        self.fuse = ConvBNReLU((len(rates) + 2) * out_channels, out_channels, 1)

    def forward(self, x):
        outs = [branch(x) for branch in self.branches]
        pooled = F.relu(self.pool_conv(F.adaptive_avg_pool2d(x, 1)))
        outs.append(F.interpolate(pooled, size=x.shape[-2:], mode="bilinear", align_corners=False))
        return self.fuse(torch.cat(outs, dim=1))


def get_inputs():
    # Backbone features: per-sample channel offsets so the global-pooling branch carries signal.
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH) + torch.randn(BATCH, IN_CHANNELS, 1, 1)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, RATES]
