"""Stacked LSTM over batch-first feature sequences whose top layer's final hidden state is mapped to class logits."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["lstm", "recurrent", "sigmoid", "tanh", "gemm", "linear"]

BATCH = 32
SEQ_LEN = 256
INPUT_SIZE = 256
HIDDEN_SIZE = 512
NUM_LAYERS = 2
NUM_CLASSES = 128

VARIANTS = [
    dict(BATCH=17, SEQ_LEN=333, INPUT_SIZE=200, HIDDEN_SIZE=384, NUM_LAYERS=3, NUM_CLASSES=99),
    dict(BATCH=64, SEQ_LEN=127, INPUT_SIZE=513, HIDDEN_SIZE=768, NUM_LAYERS=2, NUM_CLASSES=1000),
]
SMALL = dict(BATCH=2, SEQ_LEN=12, INPUT_SIZE=16, HIDDEN_SIZE=24, NUM_LAYERS=2, NUM_CLASSES=10)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=9, INPUT_SIZE=13, HIDDEN_SIZE=21, NUM_LAYERS=3, NUM_CLASSES=7),
    dict(BATCH=1, SEQ_LEN=15, INPUT_SIZE=19, HIDDEN_SIZE=17, NUM_LAYERS=1, NUM_CLASSES=5),
]


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        # x: (batch, seq_len, input_size); zero initial states.
        _, (h_n, _) = self.lstm(x)
        return self.fc(h_n[-1])


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, INPUT_SIZE)]


def get_init_inputs():
    return [INPUT_SIZE, HIDDEN_SIZE, NUM_LAYERS, NUM_CLASSES]
