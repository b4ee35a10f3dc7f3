"""A deep, narrow multilayer perceptron: an input projection, a long stack of equal-width Linear+ReLU layers and a linear classifier."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["mlp", "linear", "gemm", "bias", "relu"]

BATCH = 4096
IN_FEATURES = 784
HIDDEN = 512
NUM_HIDDEN_LAYERS = 16
OUT_FEATURES = 10

VARIANTS = [
    dict(BATCH=3001, IN_FEATURES=1000, HIDDEN=384, NUM_HIDDEN_LAYERS=23, OUT_FEATURES=37),
    dict(BATCH=8192, IN_FEATURES=255, HIDDEN=640, NUM_HIDDEN_LAYERS=9, OUT_FEATURES=100),
]
SMALL = dict(BATCH=8, IN_FEATURES=48, HIDDEN=32, NUM_HIDDEN_LAYERS=6, OUT_FEATURES=10)
SMALL_VARIANTS = [
    dict(BATCH=5, IN_FEATURES=37, HIDDEN=24, NUM_HIDDEN_LAYERS=9, OUT_FEATURES=7),
    dict(BATCH=13, IN_FEATURES=21, HIDDEN=45, NUM_HIDDEN_LAYERS=3, OUT_FEATURES=11),
]


class Model(nn.Module):
    def __init__(self, in_features, hidden, num_hidden_layers, out_features):
        super().__init__()
        dims = [in_features] + [hidden] * num_hidden_layers
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.head = nn.Linear(hidden, out_features)
        # He initialisation keeps the activation scale constant through the deep ReLU stack.
        for layer in self.hidden:
            nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")

    def forward(self, x):
        for layer in self.hidden:
            x = F.relu(layer(x))
        return self.head(x)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, HIDDEN, NUM_HIDDEN_LAYERS, OUT_FEATURES]
