"""InfoNCE contrastive loss per query: the query-key similarity matrix divided by the vector norms, divided by a temperature, and cross-entropy against the matching (diagonal) key."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["matmul", "norm", "divide", "logsumexp", "diagonal", "subtract", "cross_entropy", "contrastive"]

BATCH = 8192
DIM = 1024
TEMPERATURE = 0.07

VARIANTS = [
    dict(BATCH=4099, DIM=768),
    dict(BATCH=12287, DIM=256),
]
SMALL = dict(BATCH=24, DIM=16)
SMALL_VARIANTS = [
    dict(BATCH=7, DIM=33),
    dict(BATCH=41, DIM=9),
]


class Model(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, queries, keys):
        sim = torch.matmul(queries, keys.t())
        q_norm = queries.norm(dim=1).clamp_min(1e-8)
        k_norm = keys.norm(dim=1).clamp_min(1e-8)
        logits = sim / (q_norm[:, None] * k_norm[None, :]) / self.temperature
        return torch.logsumexp(logits, dim=1) - logits.diagonal()


def get_inputs():
    queries = torch.randn(BATCH, DIM)
    # positives: keys are noisy views of their queries
    keys = queries + torch.randn(BATCH, DIM) * 1.5
    return [queries, keys]


def get_init_inputs():
    return [TEMPERATURE]
