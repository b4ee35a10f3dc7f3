"""VAE encoder head with the reparameterization trick: one linear producing mean and log-variance, clamped log-variance, std = exp(0.5 * logvar), and z = mu + std * eps with eps given."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["gemm", "bias", "chunk", "clamp", "exp", "mul", "add", "vae"]

BATCH = 8192
HIDDEN = 2048
LATENT = 1024
LOGVAR_MIN = -6.0
LOGVAR_MAX = 2.0

VARIANTS = [
    dict(BATCH=3001, HIDDEN=1536, LATENT=777),
    dict(BATCH=16384, HIDDEN=512, LATENT=256),
]
SMALL = dict(BATCH=24, HIDDEN=48, LATENT=16)
SMALL_VARIANTS = [
    dict(BATCH=7, HIDDEN=33, LATENT=9),
    dict(BATCH=33, HIDDEN=20, LATENT=25),
]


class Model(nn.Module):
    def __init__(self, hidden, latent, logvar_min, logvar_max):
        super().__init__()
        self.head = nn.Linear(hidden, 2 * latent)
        self.logvar_min = logvar_min
        self.logvar_max = logvar_max

    def forward(self, h, eps):
        mu, logvar = self.head(h).chunk(2, dim=-1)
        logvar = logvar.clamp(self.logvar_min, self.logvar_max)
        return mu + torch.exp(0.5 * logvar) * eps


def get_inputs():
    h = torch.randn(BATCH, HIDDEN) * 3.0
    eps = torch.randn(BATCH, LATENT)
    return [h, eps]


def get_init_inputs():
    return [HIDDEN, LATENT, LOGVAR_MIN, LOGVAR_MAX]
