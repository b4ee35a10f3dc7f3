"""SwiGLU gate: silu(x W_g^T) * (x W_u^T) as two cuBLAS GEMMs + ONE fused elementwise kernel.

The fused kernel reads both GEMM outputs once with float4 loads (grid-stride), computes
g * sigmoid(g) * u in registers and writes the product in place over the gate buffer (our own
temporary). PyTorch's eager graph runs SiLU (read + write of the gate) and then the multiply
(two reads + one write), i.e. an extra full read/write of a TOKENS x HIDDEN tensor.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

if not torch.cuda.is_available():
    raise RuntimeError("3_DualGemm_SiLU_Mul CUDA solution: needs a CUDA GPU (torch.cuda.is_available() is False)")

_cpp = "torch::Tensor silu_mul_(torch::Tensor gate, torch::Tensor up);"

_cuda = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

__global__ void silu_mul_vec4(float4* __restrict__ g, const float4* __restrict__ u, int64_t n4) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 a = g[i];
        const float4 b = __ldg(u + i);
        a.x = silu(a.x) * b.x; a.y = silu(a.y) * b.y; a.z = silu(a.z) * b.z; a.w = silu(a.w) * b.w;
        g[i] = a;
    }
}

__global__ void silu_mul_scalar(float* __restrict__ g, const float* __restrict__ u, int64_t start, int64_t n) {
    for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        g[i] = silu(g[i]) * __ldg(u + i);
}

torch::Tensor silu_mul_(torch::Tensor gate, torch::Tensor up) {
    TORCH_CHECK(gate.is_cuda() && gate.is_contiguous() && up.is_contiguous() && gate.numel() == up.numel(), "contiguous CUDA tensors of one size");
    TORCH_CHECK(gate.scalar_type() == at::kFloat && up.scalar_type() == at::kFloat, "fp32 only");
    const int64_t n = gate.numel();
    if (n == 0) return gate;
    auto stream = c10::cuda::getCurrentCUDAStream();
    float* gp = gate.data_ptr<float>();
    const float* upp = up.data_ptr<float>();
    const bool aligned = (reinterpret_cast<uintptr_t>(gp) % 16 == 0) && (reinterpret_cast<uintptr_t>(upp) % 16 == 0);
    const int threads = 256;
    int64_t done = 0;
    if (aligned) {
        const int64_t n4 = n / 4;
        if (n4 > 0) {
            const int grid = (int)std::min<int64_t>((n4 + threads - 1) / threads, 132 * 16);
            silu_mul_vec4<<<grid, threads, 0, stream>>>(reinterpret_cast<float4*>(gp), reinterpret_cast<const float4*>(upp), n4);
        }
        done = n4 * 4;
    }
    if (done < n) {
        const int grid = (int)std::min<int64_t>((n - done + threads - 1) / threads, 132 * 16);
        silu_mul_scalar<<<grid, threads, 0, stream>>>(gp, upp, done, n);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return gate;
}
"""

_ext = load_inline(
    name="kb_l2_3_dualgemm_silu_mul",
    cpp_sources=_cpp,
    cuda_sources=_cuda,
    functions=["silu_mul_"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        g = torch.mm(x2, self.gate_proj.weight.t())       # cuBLAS SGEMMs, fresh buffers
        u = torch.mm(x2, self.up_proj.weight.t())
        _ext.silu_mul_(g, u)
        return g.view(*x.shape[:-1], g.shape[-1])
