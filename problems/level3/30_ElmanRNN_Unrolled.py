"""Elman RNN cell (tanh of input and recurrent projections) unrolled by hand over time, with a linear readout of every hidden state."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["rnn", "recurrent", "tanh", "gemm", "linear", "loop"]

BATCH = 64
SEQ_LEN = 200
INPUT_SIZE = 128
HIDDEN_SIZE = 1024
OUTPUT_SIZE = 128

VARIANTS = [
    dict(BATCH=33, SEQ_LEN=201, INPUT_SIZE=77, HIDDEN_SIZE=1500, OUTPUT_SIZE=61),
    dict(BATCH=128, SEQ_LEN=130, INPUT_SIZE=256, HIDDEN_SIZE=640, OUTPUT_SIZE=255),
]
SMALL = dict(BATCH=2, SEQ_LEN=12, INPUT_SIZE=16, HIDDEN_SIZE=32, OUTPUT_SIZE=8)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=9, INPUT_SIZE=11, HIDDEN_SIZE=21, OUTPUT_SIZE=5),
    dict(BATCH=1, SEQ_LEN=15, INPUT_SIZE=7, HIDDEN_SIZE=27, OUTPUT_SIZE=13),
]


class ElmanCell(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.in2hid = nn.Linear(input_size, hidden_size)
        self.hid2hid = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, x_t, h):
        return torch.tanh(self.in2hid(x_t) + self.hid2hid(h))


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.cell = ElmanCell(input_size, hidden_size)
        self.readout = nn.Linear(hidden_size, output_size)

    def forward(self, x, h0):
        # x: (batch, seq_len, input_size); h0: (batch, hidden_size)
        h = h0
        states = []
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
            states.append(h)
        hs = torch.stack(states, dim=1)   # (batch, seq_len, hidden)
        return self.readout(hs)           # (batch, seq_len, output_size)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, INPUT_SIZE), 0.5 * torch.randn(BATCH, HIDDEN_SIZE)]


def get_init_inputs():
    return [INPUT_SIZE, HIDDEN_SIZE, OUTPUT_SIZE]
