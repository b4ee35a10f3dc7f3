"""Tiny vision transformer classifier: patch embedding, class token, position embeddings, a stack of pre-norm encoder blocks, final LayerNorm and a linear head on the class token."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["transformer", "vit", "conv2d", "patch_embedding", "attention", "softmax", "layernorm", "gelu", "gemm", "residual", "classifier"]

BATCH = 64
IMAGE_SIZE = 224
PATCH_SIZE = 16
IN_CHANNELS = 3
D_MODEL = 192
NUM_HEADS = 3
DEPTH = 6
NUM_CLASSES = 1000

VARIANTS = [
    dict(BATCH=37, IMAGE_SIZE=160, PATCH_SIZE=10, IN_CHANNELS=3, D_MODEL=240, NUM_HEADS=4, DEPTH=5, NUM_CLASSES=101),
    dict(BATCH=128, IMAGE_SIZE=84, PATCH_SIZE=12, IN_CHANNELS=3, D_MODEL=384, NUM_HEADS=6, DEPTH=7, NUM_CLASSES=1000),
]
SMALL = dict(BATCH=2, IMAGE_SIZE=16, PATCH_SIZE=4, IN_CHANNELS=3, D_MODEL=24, NUM_HEADS=2, DEPTH=2, NUM_CLASSES=10)
SMALL_VARIANTS = [
    dict(BATCH=1, IMAGE_SIZE=15, PATCH_SIZE=5, IN_CHANNELS=3, D_MODEL=18, NUM_HEADS=3, DEPTH=3, NUM_CLASSES=7),
    dict(BATCH=3, IMAGE_SIZE=12, PATCH_SIZE=4, IN_CHANNELS=1, D_MODEL=20, NUM_HEADS=2, DEPTH=1, NUM_CLASSES=13),
]


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.norm1 = nn.LayerNorm(d_model, eps=1e-6)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        with torch.no_grad():  # trained-model-like attention sharpness: score std ~2 instead of ~0.3 at default init
            self.qkv.weight[: 2 * d_model].mul_(2.5)
        self.proj = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-6)
        self.fc1 = nn.Linear(d_model, 4 * d_model)
        self.fc2 = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        attn = ((q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)).softmax(dim=-1)
        x = x + self.proj((attn @ v).transpose(1, 2).reshape(b, t, d))
        x = x + self.fc2(F.gelu(self.fc1(self.norm2(x))))
        return x


class Model(nn.Module):
    def __init__(self, image_size, patch_size, in_channels, d_model, num_heads, depth, num_classes):
        super().__init__()
        num_patches = (image_size // patch_size) ** 2
        self.patch_embed = nn.Conv2d(in_channels, d_model, kernel_size=patch_size, stride=patch_size)
        self.cls_token = nn.Parameter(0.02 * torch.randn(1, 1, d_model))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, num_patches + 1, d_model))
        self.blocks = nn.ModuleList([EncoderBlock(d_model, num_heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(d_model, eps=1e-6)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, images):
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])     # (batch, num_classes)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, IMAGE_SIZE, IMAGE_SIZE)]


def get_init_inputs():
    return [IMAGE_SIZE, PATCH_SIZE, IN_CHANNELS, D_MODEL, NUM_HEADS, DEPTH, NUM_CLASSES]
