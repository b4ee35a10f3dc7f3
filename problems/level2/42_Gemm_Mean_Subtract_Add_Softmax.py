"""Rainbow DQN dueling distributional head: one linear producing value and advantage atom logits, advantages centred by their mean over actions, the value added, and softmax over the return atoms."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "mean", "subtract", "add", "softmax", "dueling"]

BATCH = 8192
HIDDEN = 2048
NUM_ACTIONS = 18
NUM_ATOMS = 51

VARIANTS = [
    dict(BATCH=2047, HIDDEN=3072, NUM_ACTIONS=9, NUM_ATOMS=101),
    dict(BATCH=16383, HIDDEN=512, NUM_ACTIONS=18, NUM_ATOMS=201),
]
SMALL = dict(BATCH=16, HIDDEN=32, NUM_ACTIONS=4, NUM_ATOMS=11)
SMALL_VARIANTS = [
    dict(BATCH=5, HIDDEN=17, NUM_ACTIONS=3, NUM_ATOMS=7),
    dict(BATCH=23, HIDDEN=24, NUM_ACTIONS=6, NUM_ATOMS=5),
]


class Model(nn.Module):
    def __init__(self, hidden, num_actions, num_atoms):
        super().__init__()
        self.head = nn.Linear(hidden, (1 + num_actions) * num_atoms)
        self.num_actions = num_actions
        self.num_atoms = num_atoms

    def forward(self, h):
        out = self.head(h).view(h.shape[0], 1 + self.num_actions, self.num_atoms)
        value, adv = out[:, :1], out[:, 1:]
        q_logits = value + adv - adv.mean(dim=1, keepdim=True)
        return F.softmax(q_logits, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, HIDDEN) * 3.0]


def get_init_inputs():
    return [HIDDEN, NUM_ACTIONS, NUM_ATOMS]
