"""S4D layer: a diagonal complex state-space model is discretised (zero-order hold) into a length-L convolution kernel via a Vandermonde product, applied to the sequence with an FFT long convolution, plus skip term, GELU and a pointwise GLU output mixing."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["ssm", "s4d", "fft", "long_convolution", "complex", "exp", "einsum", "gelu", "glu", "conv1d"]

BATCH = 16
D_MODEL = 512
SEQ_LEN = 4096
D_STATE = 64

VARIANTS = [
    dict(BATCH=5, D_MODEL=384, SEQ_LEN=10000, D_STATE=64),
    dict(BATCH=32, D_MODEL=768, SEQ_LEN=1021, D_STATE=32),
]
SMALL = dict(BATCH=2, D_MODEL=16, SEQ_LEN=16, D_STATE=8)
SMALL_VARIANTS = [
    dict(BATCH=1, D_MODEL=13, SEQ_LEN=15, D_STATE=6),
    dict(BATCH=3, D_MODEL=11, SEQ_LEN=9, D_STATE=10),
]


class Model(nn.Module):
    def __init__(self, d_model, d_state, dt_min=1e-3, dt_max=1e-1):
        super().__init__()
        n = d_state // 2                       # complex-conjugate pairs
        self.log_dt = nn.Parameter(torch.rand(d_model) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
        self.log_A_real = nn.Parameter(torch.log(0.5 * torch.ones(d_model, n)))   # S4D-Lin init
        self.A_imag = nn.Parameter(math.pi * torch.arange(n, dtype=torch.float32).repeat(d_model, 1))
        self.C_real = nn.Parameter(torch.randn(d_model, n) * 0.5 ** 0.5)
        self.C_imag = nn.Parameter(torch.randn(d_model, n) * 0.5 ** 0.5)
        self.D = nn.Parameter(torch.randn(d_model))
        self.output_linear = nn.Conv1d(d_model, 2 * d_model, kernel_size=1)

    def kernel(self, length):
        dt = torch.exp(self.log_dt)                                        # (H,)
        A = torch.complex(-torch.exp(self.log_A_real), self.A_imag)       # (H, N)
        C = torch.complex(self.C_real, self.C_imag)
        dtA = A * dt.unsqueeze(-1)
        C = C * (torch.exp(dtA) - 1.0) / A                                 # ZOH discretisation
        pos = torch.arange(length, device=dtA.device, dtype=torch.float32)
        vander = torch.exp(dtA.unsqueeze(-1) * pos)                        # (H, N, L)
        return 2.0 * torch.einsum("hn,hnl->hl", C, vander).real            # (H, L)

    def forward(self, u):
        # u: (batch, d_model, seq_len)
        length = u.shape[-1]
        k = self.kernel(length)
        k_f = torch.fft.rfft(k, n=2 * length)
        u_f = torch.fft.rfft(u, n=2 * length)
        y = torch.fft.irfft(u_f * k_f, n=2 * length)[..., :length]        # causal convolution
        y = y + u * self.D.unsqueeze(-1)
        y = F.gelu(y)
        return F.glu(self.output_linear(y), dim=1)                        # (batch, d_model, seq_len)


def get_inputs():
    return [torch.randn(BATCH, D_MODEL, SEQ_LEN)]


def get_init_inputs():
    return [D_MODEL, D_STATE]
