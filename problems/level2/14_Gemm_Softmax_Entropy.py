"""Policy-head entropy: linear action logits, softmax over actions, and the Shannon entropy -sum(p * log p) of each sample computed through log-softmax."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "softmax", "log_softmax", "mul", "sum", "entropy"]

BATCH = 8192
IN_FEATURES = 1024
NUM_ACTIONS = 4096

VARIANTS = [
    dict(BATCH=3333, IN_FEATURES=512, NUM_ACTIONS=18000),
    dict(BATCH=16001, IN_FEATURES=2048, NUM_ACTIONS=257),
]
SMALL = dict(BATCH=24, IN_FEATURES=64, NUM_ACTIONS=40)
SMALL_VARIANTS = [
    dict(BATCH=7, IN_FEATURES=33, NUM_ACTIONS=5),
    dict(BATCH=37, IN_FEATURES=18, NUM_ACTIONS=71),
]


class Model(nn.Module):
    def __init__(self, in_features, num_actions):
        super().__init__()
        self.policy = nn.Linear(in_features, num_actions)

    def forward(self, state):
        logits = self.policy(state)
        log_p = F.log_softmax(logits, dim=-1)
        return -(log_p.exp() * log_p).sum(dim=-1)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES) * 4.0]


def get_init_inputs():
    return [IN_FEATURES, NUM_ACTIONS]
