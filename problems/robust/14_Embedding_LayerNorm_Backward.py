"""Token embedding lookup followed by LayerNorm; the output and the gradients of the embedding table and LayerNorm parameters are judged (int64 tokens get none)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = "backward"
TAGS = ["embedding", "layernorm", "normalization", "gather"]

BATCH = 32
SEQ_LEN = 2048
VOCAB_SIZE = 32000
EMBED_DIM = 1024
EPS = 1e-5

VARIANTS = [
    dict(BATCH=16, SEQ_LEN=1023, VOCAB_SIZE=50257, EMBED_DIM=768, EPS=1e-5),
    dict(BATCH=6, SEQ_LEN=1000, VOCAB_SIZE=100277, EMBED_DIM=1536, EPS=1e-5),
]
SMALL = dict(BATCH=4, SEQ_LEN=24, VOCAB_SIZE=97, EMBED_DIM=48, EPS=1e-5)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=13, VOCAB_SIZE=31, EMBED_DIM=65, EPS=1e-5),
    dict(BATCH=2, SEQ_LEN=41, VOCAB_SIZE=203, EMBED_DIM=33, EPS=1e-5),
]


class Model(nn.Module):
    def __init__(self, vocab_size, embed_dim, eps):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.norm = nn.LayerNorm(embed_dim, eps=eps)
        with torch.no_grad():
            # Rows with their own offset and scale, so LayerNorm is not a near no-op.
            self.embed.weight.mul_(0.5 + torch.rand(vocab_size, 1)).add_(0.5 * torch.randn(vocab_size, 1))
            self.norm.weight.normal_(1.0, 0.2)
            self.norm.bias.normal_(0.0, 0.2)

    def forward(self, tokens):
        return self.norm(self.embed(tokens))


def get_inputs():
    return [torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN), dtype=torch.int64)]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM, EPS]
