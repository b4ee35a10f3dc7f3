"""BERT-style feed-forward output block: down-projection of the intermediate activations, addition of the residual stream, and post-LayerNorm."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "residual", "add", "layernorm"]

BATCH = 32
SEQ_LEN = 512
HIDDEN = 1024
INTERMEDIATE = 4096
EPS = 1e-12

VARIANTS = [
    dict(BATCH=7, SEQ_LEN=1001, HIDDEN=768, INTERMEDIATE=3072),
    dict(BATCH=64, SEQ_LEN=129, HIDDEN=1280, INTERMEDIATE=5119),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, HIDDEN=48, INTERMEDIATE=96)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=23, HIDDEN=33, INTERMEDIATE=70),
    dict(BATCH=3, SEQ_LEN=9, HIDDEN=64, INTERMEDIATE=41),
]


class Model(nn.Module):
    def __init__(self, hidden, intermediate, eps):
        super().__init__()
        self.dense = nn.Linear(intermediate, hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, intermediate_states, residual):
        return self.norm(self.dense(intermediate_states) + residual)


def get_inputs():
    intermediate_states = torch.randn(BATCH, SEQ_LEN, INTERMEDIATE)
    residual = torch.randn(BATCH, SEQ_LEN, HIDDEN)
    return [intermediate_states, residual]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE, EPS]
