"""Transformer MLP block fc2(gelu(fc1(x))) with exact (erf) GELU and biases; output and all gradients are judged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["gemm", "linear", "bias", "gelu", "mlp"]

BATCH = 8
SEQ_LEN = 512
DIM = 1024
HIDDEN = 4096

VARIANTS = [
    dict(BATCH=16, SEQ_LEN=197, DIM=768, HIDDEN=3072),
    dict(BATCH=3, SEQ_LEN=1001, DIM=1280, HIDDEN=5119),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, DIM=48, HIDDEN=192)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=7, DIM=35, HIDDEN=141),
    dict(BATCH=1, SEQ_LEN=33, DIM=64, HIDDEN=97),
]


class Model(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, DIM)]


def get_init_inputs():
    return [DIM, HIDDEN]
