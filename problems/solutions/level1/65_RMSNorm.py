"""RMSNorm in one fused kernel: one block per row, the row is held in registers (float4 loads),
sum of squares by warp-shuffle + shared-memory block reduction, then scale by rsqrt and the weight.

PyTorch's written-out reference launches pow, mean, add, rsqrt, mul, mul (six kernels, several full
passes over the tensor); this reads x once and writes y once.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

if not torch.cuda.is_available():
    raise RuntimeError("65_RMSNorm CUDA solution: needs a CUDA GPU (torch.cuda.is_available() is False)")

_cpp = "torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w, double eps);"

_cuda = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum over the block; every thread gets the result. sh must hold 32 floats.
__device__ __forceinline__ float block_sum(float v, float* sh) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    const int nw = (blockDim.x + 31) >> 5;
    if (wid == 0) {
        float t = (lane < nw) ? sh[lane] : 0.f;
        t = warp_sum(t);
        if (lane == 0) sh[0] = t;
    }
    __syncthreads();
    return sh[0];
}

// Vectorised: H % 4 == 0, rows 16-byte aligned. Each thread caches VPT float4 of its row.
template <int VPT>
__global__ void __launch_bounds__(1024) rmsnorm_vec(const float4* __restrict__ x, const float4* __restrict__ w,
                            float4* __restrict__ y, int64_t rows, int h4, float inv_h, float eps) {
    __shared__ float sh[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float4* xr = x + row * h4;
        float4 r[VPT];
        float ss = 0.f;
#pragma unroll
        for (int i = 0; i < VPT; ++i) {
            const int c = threadIdx.x + i * blockDim.x;
            if (c < h4) {
                r[i] = __ldg(xr + c);
                ss += r[i].x * r[i].x + r[i].y * r[i].y + r[i].z * r[i].z + r[i].w * r[i].w;
            }
        }
        ss = block_sum(ss, sh);
        const float inv = rsqrtf(ss * inv_h + eps);
        float4* yr = y + row * h4;
#pragma unroll
        for (int i = 0; i < VPT; ++i) {
            const int c = threadIdx.x + i * blockDim.x;
            if (c < h4) {
                const float4 g = __ldg(w + c);
                float4 o;
                o.x = r[i].x * inv * g.x; o.y = r[i].y * inv * g.y;
                o.z = r[i].z * inv * g.z; o.w = r[i].w * inv * g.w;
                yr[c] = o;
            }
        }
    }
}

// Any H: two sweeps over the row (the second one is served from L1/L2).
__global__ void rmsnorm_scalar(const float* __restrict__ x, const float* __restrict__ w,
                               float* __restrict__ y, int64_t rows, int h, float inv_h, float eps) {
    __shared__ float sh[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* xr = x + row * h;
        float ss = 0.f;
        for (int c = threadIdx.x; c < h; c += blockDim.x) { const float v = xr[c]; ss += v * v; }
        ss = block_sum(ss, sh);
        const float inv = rsqrtf(ss * inv_h + eps);
        float* yr = y + row * h;
        for (int c = threadIdx.x; c < h; c += blockDim.x) yr[c] = xr[c] * inv * __ldg(w + c);
    }
}

torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w, double eps) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat, "fp32 only");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    const int h = (int)xc.size(-1);
    TORCH_CHECK(wc.numel() == h, "weight size mismatch");
    auto y = torch::empty_like(xc);
    const int64_t rows = h ? xc.numel() / h : 0;
    if (rows == 0 || h == 0) return y;
    auto stream = c10::cuda::getCurrentCUDAStream();
    const int grid = (int)std::min<int64_t>(rows, 1 << 20);
    const float inv_h = 1.0f / (float)h;
    const bool vec = (h % 4 == 0) &&
        (reinterpret_cast<uintptr_t>(xc.data_ptr<float>()) % 16 == 0) &&
        (reinterpret_cast<uintptr_t>(wc.data_ptr<float>()) % 16 == 0) &&
        (reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0);
    const int h4 = h / 4;
    if (vec && h4 <= 1024 * 8) {
        int threads = std::min(1024, std::max(32, ((h4 + 3) / 4 + 31) / 32 * 32));  // aim for ~4 float4 per thread
        if (h4 <= 256) threads = std::max(32, (h4 + 31) / 32 * 32);
        const int vpt = (h4 + threads - 1) / threads;
        auto xp = reinterpret_cast<const float4*>(xc.data_ptr<float>());
        auto wp = reinterpret_cast<const float4*>(wc.data_ptr<float>());
        auto yp = reinterpret_cast<float4*>(y.data_ptr<float>());
        const float e = (float)eps;
        if (vpt <= 1)      rmsnorm_vec<1><<<grid, threads, 0, stream>>>(xp, wp, yp, rows, h4, inv_h, e);
        else if (vpt <= 2) rmsnorm_vec<2><<<grid, threads, 0, stream>>>(xp, wp, yp, rows, h4, inv_h, e);
        else if (vpt <= 4) rmsnorm_vec<4><<<grid, threads, 0, stream>>>(xp, wp, yp, rows, h4, inv_h, e);
        else               rmsnorm_vec<8><<<grid, threads, 0, stream>>>(xp, wp, yp, rows, h4, inv_h, e);
    } else {
        const int threads = std::min(1024, std::max(32, (h + 31) / 32 * 32));
        rmsnorm_scalar<<<grid, std::min(threads, 512), 0, stream>>>(xc.data_ptr<float>(), wc.data_ptr<float>(),
            y.data_ptr<float>(), rows, h, inv_h, (float)eps);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="kb_l1_65_rmsnorm",
    cpp_sources=_cpp,
    cuda_sources=_cuda,
    functions=["rmsnorm"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x):
        return _ext.rmsnorm(x, self.weight, float(self.eps))
