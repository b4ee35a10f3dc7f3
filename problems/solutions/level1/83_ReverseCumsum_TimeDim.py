"""Reverse (suffix) cumulative sum over the time axis of a (B, T, C) tensor, without any flips.

The reference is flip -> cumsum(dim=1) -> flip, and ATen's cumsum over a non-innermost dimension
is a sequential fp32 accumulation per (batch, channel) column. Because a 4K-long fp32 running sum
drifts by up to ~1e-3 (ten times the tolerance) in an order-dependent way, this kernel performs the
very same sequential accumulation (t = T-1 down to 0, acc = acc + x[t]) so it agrees with the
reference to the last bit, but reads x in place from the end instead of materialising two flipped
copies. One thread per column (adjacent threads = adjacent channels: every access is a coalesced
128-byte row), 32 loads in flight per thread via register double buffering to cover DRAM latency.
PyTorch: three kernels (flip, scan, flip), three full read+write passes; this: one read, one write.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

if not torch.cuda.is_available():
    raise RuntimeError("83_ReverseCumsum_TimeDim CUDA solution: needs a CUDA GPU (torch.cuda.is_available() is False)")

_cpp = "torch::Tensor reverse_cumsum_dim1(torch::Tensor x);"

_cuda = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

constexpr int U = 16;   // time steps per register batch (two batches in flight)

__global__ void __launch_bounds__(128) reverse_cumsum_seq(const float* __restrict__ x, float* __restrict__ y,
                                                          int64_t B, int64_t T, int64_t C) {
    const int64_t cols = B * C;
    for (int64_t col = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; col < cols; col += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = col / C, c = col - b * C;
        const float* xb = x + b * T * C + c;
        float* yb = y + b * T * C + c;
        float acc = 0.f;
        int64_t t = T - 1;                   // next time step to accumulate
        float cur[U], nxt[U];
        // prime the first batch
#pragma unroll
        for (int u = 0; u < U; ++u) cur[u] = (t - u >= 0) ? __ldg(xb + (t - u) * C) : 0.f;
        while (t >= 0) {
            // prefetch the following batch
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int64_t tt = t - U - u;
                nxt[u] = (tt >= 0) ? __ldg(xb + tt * C) : 0.f;
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int64_t tt = t - u;
                if (tt >= 0) { acc = acc + cur[u]; yb[tt * C] = acc; }
            }
#pragma unroll
            for (int u = 0; u < U; ++u) cur[u] = nxt[u];
            t -= U;
        }
    }
}

torch::Tensor reverse_cumsum_dim1(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() == 3, "fp32 CUDA tensor (B, T, C)");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t B = xc.size(0), T = xc.size(1), C = xc.size(2);
    if (xc.numel() == 0) return y;
    const int threads = 128;
    const int grid = (int)std::min<int64_t>((B * C + threads - 1) / threads, 1 << 20);
    reverse_cumsum_seq<<<grid, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), y.data_ptr<float>(), B, T, C);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="kb_l1_83_reverse_cumsum_v2",
    cpp_sources=_cpp,
    cuda_sources=_cuda,
    functions=["reverse_cumsum_dim1"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.reverse_cumsum_dim1(x)
