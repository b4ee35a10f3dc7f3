"""Sequence tagger: token embedding, two-layer bidirectional LSTM, and a per-token linear layer producing tag logits."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["lstm", "bidirectional", "recurrent", "embedding", "sigmoid", "tanh", "gemm", "linear"]

BATCH = 32
SEQ_LEN = 200
VOCAB_SIZE = 5000
EMBED_DIM = 256
HIDDEN_SIZE = 256
NUM_LAYERS = 2
NUM_TAGS = 47

VARIANTS = [
    dict(BATCH=13, SEQ_LEN=311, VOCAB_SIZE=30001, EMBED_DIM=300, HIDDEN_SIZE=200, NUM_LAYERS=2, NUM_TAGS=9),
    dict(BATCH=48, SEQ_LEN=96, VOCAB_SIZE=777, EMBED_DIM=128, HIDDEN_SIZE=384, NUM_LAYERS=3, NUM_TAGS=121),
]
SMALL = dict(BATCH=2, SEQ_LEN=12, VOCAB_SIZE=50, EMBED_DIM=16, HIDDEN_SIZE=16, NUM_LAYERS=2, NUM_TAGS=6)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=9, VOCAB_SIZE=37, EMBED_DIM=13, HIDDEN_SIZE=11, NUM_LAYERS=1, NUM_TAGS=5),
    dict(BATCH=1, SEQ_LEN=15, VOCAB_SIZE=101, EMBED_DIM=21, HIDDEN_SIZE=15, NUM_LAYERS=3, NUM_TAGS=7),
]


class Model(nn.Module):
    def __init__(self, vocab_size, embed_dim, hidden_size, num_layers, num_tags):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers=num_layers,
                            batch_first=True, bidirectional=True)
        self.classifier = nn.Linear(2 * hidden_size, num_tags)

    def forward(self, tokens):
        # tokens: (batch, seq_len) int64
        x = self.embed(tokens)
        h, _ = self.lstm(x)          # (batch, seq_len, 2 * hidden)
        return self.classifier(h)    # (batch, seq_len, num_tags)


def get_inputs():
    return [torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM, HIDDEN_SIZE, NUM_LAYERS, NUM_TAGS]
