"""Single-layer LSTM with a recurrent projection (LSTMP), seeded with given initial states, returning the full projected output sequence."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["lstm", "recurrent", "projection", "sigmoid", "tanh", "gemm"]

SEQ_LEN = 512
BATCH = 16
INPUT_SIZE = 320
HIDDEN_SIZE = 1024
PROJ_SIZE = 256

VARIANTS = [
    dict(SEQ_LEN=255, BATCH=33, INPUT_SIZE=80, HIDDEN_SIZE=1536, PROJ_SIZE=384),
    dict(SEQ_LEN=701, BATCH=8, INPUT_SIZE=512, HIDDEN_SIZE=640, PROJ_SIZE=200),
]
SMALL = dict(SEQ_LEN=14, BATCH=2, INPUT_SIZE=12, HIDDEN_SIZE=32, PROJ_SIZE=16)
SMALL_VARIANTS = [
    dict(SEQ_LEN=9, BATCH=3, INPUT_SIZE=11, HIDDEN_SIZE=27, PROJ_SIZE=13),
    dict(SEQ_LEN=16, BATCH=1, INPUT_SIZE=7, HIDDEN_SIZE=19, PROJ_SIZE=9),
]


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, proj_size):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=1, proj_size=proj_size)

    def forward(self, x, h0, c0):
        # x: (seq_len, batch, input_size); h0: (1, batch, proj_size); c0: (1, batch, hidden_size)
        out, _ = self.lstm(x, (h0, c0))
        return out  # (seq_len, batch, proj_size)


def get_inputs():
    x = torch.randn(SEQ_LEN, BATCH, INPUT_SIZE)
    h0 = 0.5 * torch.randn(1, BATCH, PROJ_SIZE)
    c0 = 0.5 * torch.randn(1, BATCH, HIDDEN_SIZE)
    return [x, h0, c0]


def get_init_inputs():
    return [INPUT_SIZE, HIDDEN_SIZE, PROJ_SIZE]
