"""Three-layer GRU over batch-first sequences from a given initial hidden state, returning the top layer's output sequence."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gru", "recurrent", "sigmoid", "tanh", "gemm"]

BATCH = 24
SEQ_LEN = 384
INPUT_SIZE = 256
HIDDEN_SIZE = 512
NUM_LAYERS = 3

VARIANTS = [
    dict(BATCH=9, SEQ_LEN=500, INPUT_SIZE=161, HIDDEN_SIZE=1000, NUM_LAYERS=2),
    dict(BATCH=64, SEQ_LEN=129, INPUT_SIZE=512, HIDDEN_SIZE=320, NUM_LAYERS=4),
]
SMALL = dict(BATCH=2, SEQ_LEN=12, INPUT_SIZE=16, HIDDEN_SIZE=24, NUM_LAYERS=3)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=11, INPUT_SIZE=9, HIDDEN_SIZE=19, NUM_LAYERS=2),
    dict(BATCH=1, SEQ_LEN=16, INPUT_SIZE=23, HIDDEN_SIZE=29, NUM_LAYERS=1),
]


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers=num_layers, batch_first=True)

    def forward(self, x, h0):
        # x: (batch, seq_len, input_size); h0: (num_layers, batch, hidden_size)
        out, _ = self.gru(x, h0)
        return out  # (batch, seq_len, hidden_size)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, INPUT_SIZE), 0.5 * torch.randn(NUM_LAYERS, BATCH, HIDDEN_SIZE)]


def get_init_inputs():
    return [INPUT_SIZE, HIDDEN_SIZE, NUM_LAYERS]
