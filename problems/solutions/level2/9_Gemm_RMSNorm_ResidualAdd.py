"""Gemma-style post-norm: residual + RMSNorm(o_proj(x)) * (1 + w), as cuBLAS GEMM + ONE fused
epilogue kernel.

One block per row keeps the GEMM output row in registers, reduces the sum of squares with warp
shuffles, and writes residual + h * rsqrt(mean(h^2) + eps) * (1 + w) in place over the GEMM output
(our own temporary). PyTorch's written-out version launches pow, mean, add, rsqrt, two muls, an
add of (1 + w) and the residual add (about eight passes over the activation); this is one read of
the GEMM output and the residual and one write.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

if not torch.cuda.is_available():
    raise RuntimeError("9_Gemm_RMSNorm_ResidualAdd CUDA solution: needs a CUDA GPU (torch.cuda.is_available() is False)")

_cpp = "torch::Tensor rmsnorm_residual_(torch::Tensor h, torch::Tensor residual, torch::Tensor w, double eps);"

_cuda = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float block_sum(float v, float* sh) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    const int nw = (blockDim.x + 31) >> 5;
    if (wid == 0) { float t = lane < nw ? sh[lane] : 0.f; t = warp_sum(t); if (lane == 0) sh[0] = t; }
    __syncthreads();
    return sh[0];
}

template <int VPT>
__global__ void __launch_bounds__(512) rmsnorm_residual_kernel(float* __restrict__ h, const float* __restrict__ res, const float* __restrict__ w,
                                        int64_t rows, int n, float eps) {
    __shared__ float sh[32];
    const float inv_n = 1.0f / (float)n;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        float* hr = h + row * (int64_t)n;
        const float* rr = res + row * (int64_t)n;
        float v[VPT];
        float ss = 0.f;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = threadIdx.x + k * blockDim.x;
            if (c < n) { v[k] = hr[c]; ss += v[k] * v[k]; }
        }
        const float inv = rsqrtf(block_sum(ss, sh) * inv_n + eps);
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = threadIdx.x + k * blockDim.x;
            if (c < n) hr[c] = __ldg(rr + c) + (v[k] * inv) * (1.0f + __ldg(w + c));
        }
    }
}

torch::Tensor rmsnorm_residual_(torch::Tensor h, torch::Tensor residual, torch::Tensor w, double eps) {
    TORCH_CHECK(h.is_cuda() && h.is_contiguous() && h.scalar_type() == at::kFloat, "contiguous fp32 CUDA GEMM output");
    const int n = (int)h.size(-1);
    const int64_t rows = n ? h.numel() / n : 0;
    if (rows == 0) return h;
    TORCH_CHECK(n <= 16384, "feature dimension too large for the register-resident row");
    TORCH_CHECK(residual.numel() == h.numel() && w.numel() == n, "shape mismatch");
    auto r = residual.contiguous(), wc = w.contiguous();
    int threads = std::min(512, std::max(32, ((n + 7) / 8 + 31) / 32 * 32));
    const int vpt = (n + threads - 1) / threads;
    const int grid = (int)std::min<int64_t>(rows, 1 << 20);
    auto stream = c10::cuda::getCurrentCUDAStream();
    float* hp = h.data_ptr<float>();
    const float *rp = r.data_ptr<float>(), *wp = wc.data_ptr<float>();
    const float e = (float)eps;
    if (vpt <= 1)       rmsnorm_residual_kernel<1><<<grid, threads, 0, stream>>>(hp, rp, wp, rows, n, e);
    else if (vpt <= 2)  rmsnorm_residual_kernel<2><<<grid, threads, 0, stream>>>(hp, rp, wp, rows, n, e);
    else if (vpt <= 4)  rmsnorm_residual_kernel<4><<<grid, threads, 0, stream>>>(hp, rp, wp, rows, n, e);
    else if (vpt <= 8)  rmsnorm_residual_kernel<8><<<grid, threads, 0, stream>>>(hp, rp, wp, rows, n, e);
    else if (vpt <= 16) rmsnorm_residual_kernel<16><<<grid, threads, 0, stream>>>(hp, rp, wp, rows, n, e);
    else                rmsnorm_residual_kernel<32><<<grid, threads, 0, stream>>>(hp, rp, wp, rows, n, e);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return h;
}
"""

_ext = load_inline(
    name="kb_l2_9_gemm_rmsnorm_residual",
    cpp_sources=_cpp,
    cuda_sources=_cuda,
    functions=["rmsnorm_residual_"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, dim, eps):
        super().__init__()
        self.o_proj = nn.Linear(in_features, dim, bias=False)
        self.post_norm_weight = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, attn_out, residual):
        x2 = attn_out.reshape(-1, attn_out.shape[-1])
        h = torch.mm(x2, self.o_proj.weight.t())           # cuBLAS SGEMM, fresh buffer
        _ext.rmsnorm_residual_(h, residual, self.post_norm_weight, float(self.eps))
        return h.view(*attn_out.shape[:-1], h.shape[-1])
