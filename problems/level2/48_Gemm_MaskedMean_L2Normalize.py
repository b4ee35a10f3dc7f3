"""Sentence-embedding pooling head: linear projection of token states, attention-mask weighted mean over the sequence, and L2 normalization of the pooled vector."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "mul", "sum", "divide", "mean", "l2_normalize", "mask"]

BATCH = 64
SEQ_LEN = 512
IN_FEATURES = 1024
OUT_FEATURES = 768

VARIANTS = [
    dict(BATCH=17, SEQ_LEN=1999, IN_FEATURES=768, OUT_FEATURES=384),
    dict(BATCH=128, SEQ_LEN=129, IN_FEATURES=2048, OUT_FEATURES=1024),
]
SMALL = dict(BATCH=2, SEQ_LEN=16, IN_FEATURES=24, OUT_FEATURES=20)
SMALL_VARIANTS = [
    dict(BATCH=3, SEQ_LEN=7, IN_FEATURES=13, OUT_FEATURES=9),
    dict(BATCH=1, SEQ_LEN=21, IN_FEATURES=8, OUT_FEATURES=33),
]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)

    def forward(self, tokens, mask):
        h = self.proj(tokens)
        m = mask.unsqueeze(-1)
        pooled = (h * m).sum(dim=1) / m.sum(dim=1).clamp_min(1.0)
        return F.normalize(pooled, p=2.0, dim=-1)


def get_inputs():
    tokens = torch.randn(BATCH, SEQ_LEN, IN_FEATURES)
    lengths = torch.randint(1, SEQ_LEN + 1, (BATCH,))
    mask = (torch.arange(SEQ_LEN)[None, :] < lengths[:, None]).float()
    return [tokens, mask]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
