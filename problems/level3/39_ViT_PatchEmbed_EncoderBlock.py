"""Vision-transformer front end: strided-conv patch embedding, class token and learned position embeddings, then one pre-norm transformer encoder block over the token sequence."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TAGS = ["transformer", "vit", "conv2d", "patch_embedding", "attention", "softmax", "layernorm", "gelu", "gemm", "residual"]

BATCH = 32
IMAGE_SIZE = 224
PATCH_SIZE = 16
IN_CHANNELS = 3
D_MODEL = 768
NUM_HEADS = 12
MLP_DIM = 3072

VARIANTS = [
    dict(BATCH=9, IMAGE_SIZE=384, PATCH_SIZE=16, IN_CHANNELS=3, D_MODEL=576, NUM_HEADS=9, MLP_DIM=2304),
    dict(BATCH=64, IMAGE_SIZE=126, PATCH_SIZE=14, IN_CHANNELS=4, D_MODEL=1024, NUM_HEADS=16, MLP_DIM=3000),
]
SMALL = dict(BATCH=2, IMAGE_SIZE=16, PATCH_SIZE=4, IN_CHANNELS=3, D_MODEL=32, NUM_HEADS=4, MLP_DIM=64)
SMALL_VARIANTS = [
    dict(BATCH=1, IMAGE_SIZE=15, PATCH_SIZE=5, IN_CHANNELS=3, D_MODEL=24, NUM_HEADS=3, MLP_DIM=45),
    dict(BATCH=3, IMAGE_SIZE=14, PATCH_SIZE=7, IN_CHANNELS=1, D_MODEL=20, NUM_HEADS=2, MLP_DIM=37),
]


class SelfAttention(nn.Module):
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
        attn = ((q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, t, d))


class Model(nn.Module):
    def __init__(self, image_size, patch_size, in_channels, d_model, num_heads, mlp_dim):
        super().__init__()
        num_patches = (image_size // patch_size) ** 2
        self.patch_embed = nn.Conv2d(in_channels, d_model, kernel_size=patch_size, stride=patch_size)
        self.cls_token = nn.Parameter(0.02 * torch.randn(1, 1, d_model))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, num_patches + 1, d_model))
        self.norm1 = nn.LayerNorm(d_model, eps=1e-6)
        self.attn = SelfAttention(d_model, num_heads)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-6)
        self.fc1 = nn.Linear(d_model, mlp_dim)
        self.fc2 = nn.Linear(mlp_dim, d_model)

    def forward(self, images):
        # images: (batch, channels, H, W) -> tokens (batch, 1 + num_patches, d_model)
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1) + self.pos_embed
        x = x + self.attn(self.norm1(x))
        x = x + self.fc2(F.gelu(self.fc1(self.norm2(x))))
        return x


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, IMAGE_SIZE, IMAGE_SIZE)]


def get_init_inputs():
    return [IMAGE_SIZE, PATCH_SIZE, IN_CHANNELS, D_MODEL, NUM_HEADS, MLP_DIM]
