import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor silu_add(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.sizes() == y.sizes(), "x and y must have the same shape");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && y.scalar_type() == torch::kFloat32, "float32 only");
    auto xc = x.contiguous();
    auto yc = y.contiguous();
    auto out = torch::empty_like(xc);
    const float* px = xc.data_ptr<float>();
    const float* py = yc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = px[i];
        po[i] = v / (1.0f + std::exp(-v)) + py[i];
    }
    return out;
}
"""

silu_add_ext = load_inline(name="silu_add_cpu", cpp_sources=cpp_source, functions=["silu_add"], extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return silu_add_ext.silu_add(x, y)
