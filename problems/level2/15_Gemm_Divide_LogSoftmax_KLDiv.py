"""Knowledge-distillation loss per token: student logits from a linear head, student and teacher logits softened by a temperature, KL(teacher || student) over the vocabulary scaled by T^2."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "divide", "log_softmax", "kl_div", "sum", "scale"]

TOKENS = 4096
DIM = 1024
VOCAB = 16384
TEMPERATURE = 4.0

VARIANTS = [
    dict(TOKENS=1001, DIM=2048, VOCAB=32001),
    dict(TOKENS=8191, DIM=768, VOCAB=1000),
]
SMALL = dict(TOKENS=24, DIM=48, VOCAB=60)
SMALL_VARIANTS = [
    dict(TOKENS=5, DIM=33, VOCAB=17),
    dict(TOKENS=31, DIM=20, VOCAB=101),
]


class Model(nn.Module):
    def __init__(self, dim, vocab, temperature):
        super().__init__()
        self.student_head = nn.Linear(dim, vocab, bias=False)
        self.temperature = temperature

    def forward(self, hidden, teacher_logits):
        t = self.temperature
        log_p_student = F.log_softmax(self.student_head(hidden) / t, dim=-1)
        log_p_teacher = F.log_softmax(teacher_logits / t, dim=-1)
        kl = (log_p_teacher.exp() * (log_p_teacher - log_p_student)).sum(dim=-1)
        return kl * (t * t)


def get_inputs():
    hidden = torch.randn(TOKENS, DIM) * 6.0
    teacher_logits = torch.randn(TOKENS, VOCAB) * 5.0
    return [hidden, teacher_logits]


def get_init_inputs():
    return [DIM, VOCAB, TEMPERATURE]
