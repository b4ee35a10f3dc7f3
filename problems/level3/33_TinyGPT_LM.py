"""Small GPT language model: token + learned position embeddings, two pre-norm causal transformer blocks, final LayerNorm and a weight-tied LM head producing vocabulary logits."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["transformer", "gpt", "embedding", "attention", "causal", "softmax", "layernorm", "gelu", "gemm", "residual"]

BATCH = 8
SEQ_LEN = 512
VOCAB_SIZE = 12000
D_MODEL = 512
NUM_HEADS = 8
NUM_LAYERS = 2

VARIANTS = [
    dict(BATCH=3, SEQ_LEN=1023, VOCAB_SIZE=8191, D_MODEL=384, NUM_HEADS=6, NUM_LAYERS=2),
    dict(BATCH=16, SEQ_LEN=257, VOCAB_SIZE=32003, D_MODEL=640, NUM_HEADS=10, NUM_LAYERS=3),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, VOCAB_SIZE=64, D_MODEL=32, NUM_HEADS=4, NUM_LAYERS=2)
SMALL_VARIANTS = [
    dict(BATCH=1, SEQ_LEN=13, VOCAB_SIZE=97, D_MODEL=24, NUM_HEADS=3, NUM_LAYERS=1),
    dict(BATCH=3, SEQ_LEN=9, VOCAB_SIZE=51, D_MODEL=20, NUM_HEADS=2, NUM_LAYERS=2),
]


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        with torch.no_grad():  # trained-model-like attention sharpness: score std ~2 instead of ~0.3 at default init
            self.qkv.weight[: 2 * d_model].mul_(2.5)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(future, float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, num_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.proj(F.gelu(self.fc(self.ln2(x))))
        return x


class Model(nn.Module):
    def __init__(self, vocab_size, max_seq_len, d_model, num_heads, num_layers):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Embedding(max_seq_len, d_model)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.02)
        self.blocks = nn.ModuleList([Block(d_model, num_heads) for _ in range(num_layers)])
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, tokens):
        # tokens: (batch, seq) int64
        t = tokens.shape[1]
        pos = torch.arange(t, device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)[None]
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        return x @ self.wte.weight.t()      # tied LM head: (batch, seq, vocab)


def get_inputs():
    return [torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))]


def get_init_inputs():
    return [VOCAB_SIZE, SEQ_LEN, D_MODEL, NUM_HEADS, NUM_LAYERS]
