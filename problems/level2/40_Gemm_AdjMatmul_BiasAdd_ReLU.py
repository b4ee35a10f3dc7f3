"""Graph convolution layer (Kipf and Welling) on a dense normalized adjacency: feature transform X W, propagation A_hat (X W), bias add, and ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "matmul", "bias", "relu", "graph"]

NUM_NODES = 4096
IN_FEATURES = 1024
OUT_FEATURES = 512
AVG_DEGREE = 10

VARIANTS = [
    dict(NUM_NODES=4999, IN_FEATURES=1433, OUT_FEATURES=256),
    dict(NUM_NODES=8191, IN_FEATURES=500, OUT_FEATURES=128),
]
SMALL = dict(NUM_NODES=24, IN_FEATURES=16, OUT_FEATURES=12, AVG_DEGREE=4)
SMALL_VARIANTS = [
    dict(NUM_NODES=9, IN_FEATURES=13, OUT_FEATURES=5, AVG_DEGREE=3),
    dict(NUM_NODES=33, IN_FEATURES=7, OUT_FEATURES=20, AVG_DEGREE=5),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * (2.0 / in_features) ** 0.5)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x, adj):
        support = torch.matmul(x, self.weight)
        return F.relu(torch.matmul(adj, support) + self.bias)


def get_inputs():
    x = torch.randn(NUM_NODES, IN_FEATURES)
    # random undirected graph with self loops, symmetrically normalized: D^-1/2 (A + I) D^-1/2
    a = (torch.rand(NUM_NODES, NUM_NODES) < AVG_DEGREE / (2.0 * NUM_NODES)).float()
    a = ((a + a.t()) > 0).float()
    a = a + torch.eye(NUM_NODES)
    d = a.sum(dim=1).rsqrt()
    adj = d[:, None] * a * d[None, :]
    return [x, adj]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
