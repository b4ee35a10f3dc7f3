"""BERT-style output block LayerNorm(dense(x) + residual): cuBLAS GEMM (no bias) + ONE fused
epilogue kernel.

The epilogue takes one row of the GEMM output per block, adds the bias and the residual row, keeps
the sum in registers, computes mean and variance with an exact two-pass over the registers
(warp-shuffle block reductions), normalises and applies the affine, writing the row once. PyTorch
runs addmm, a residual add and a LayerNorm (the hidden-wide sum is written and read back);
here the GEMM output and the residual are read once and the result written once.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

if not torch.cuda.is_available():
    raise RuntimeError("6_Gemm_ResidualAdd_LayerNorm CUDA solution: needs a CUDA GPU (torch.cuda.is_available() is False)")

_cpp = "torch::Tensor bias_residual_layernorm_(torch::Tensor h, torch::Tensor bias, torch::Tensor residual, torch::Tensor gamma, torch::Tensor beta, double eps);"

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
// In place on the GEMM output h (our own temporary): h = LN(h + bias + residual) * gamma + beta.
template <int VPT>
__global__ void __launch_bounds__(512) bias_residual_ln_kernel(float* __restrict__ h, const float* __restrict__ bias, const float* __restrict__ res,
                                    const float* __restrict__ gamma, const float* __restrict__ beta,
                                    int64_t rows, int n, float eps) {
    __shared__ float sh[32];
    const float inv_n = 1.0f / (float)n;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        float* hr = h + row * (int64_t)n;
        const float* rr = res + row * (int64_t)n;
        float v[VPT];
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = threadIdx.x + k * blockDim.x;
            if (c < n) { v[k] = (hr[c] + __ldg(bias + c)) + __ldg(rr + c); s += v[k]; }
        }
        const float mean = block_sum(s, sh) * inv_n;
        float s2 = 0.f;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = threadIdx.x + k * blockDim.x;
            if (c < n) { const float d = v[k] - mean; s2 += d * d; }
        }
        const float rstd = rsqrtf(block_sum(s2, sh) * inv_n + eps);
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = threadIdx.x + k * blockDim.x;
            if (c < n) hr[c] = (v[k] - mean) * rstd * __ldg(gamma + c) + __ldg(beta + c);
        }
    }
}

torch::Tensor bias_residual_layernorm_(torch::Tensor h, torch::Tensor bias, torch::Tensor residual, torch::Tensor gamma, torch::Tensor beta, double eps) {
    TORCH_CHECK(h.is_cuda() && h.is_contiguous() && h.scalar_type() == at::kFloat, "contiguous fp32 CUDA GEMM output");
    const int n = (int)h.size(-1);
    const int64_t rows = n ? h.numel() / n : 0;
    if (rows == 0) return h;
    TORCH_CHECK(n <= 16384, "feature dimension too large for the register-resident row");
    TORCH_CHECK(residual.numel() == h.numel(), "residual shape mismatch");
    auto b = bias.contiguous(), r = residual.contiguous(), g = gamma.contiguous(), bt = beta.contiguous();
    int threads = std::min(512, std::max(32, ((n + 7) / 8 + 31) / 32 * 32));   // ~8 values per thread
    const int vpt = (n + threads - 1) / threads;
    const int grid = (int)std::min<int64_t>(rows, 1 << 20);
    auto stream = c10::cuda::getCurrentCUDAStream();
    float* hp = h.data_ptr<float>();
    const float *bp = b.data_ptr<float>(), *rp = r.data_ptr<float>(), *gp = g.data_ptr<float>(), *btp = bt.data_ptr<float>();
    const float e = (float)eps;
    if (vpt <= 1)       bias_residual_ln_kernel<1><<<grid, threads, 0, stream>>>(hp, bp, rp, gp, btp, rows, n, e);
    else if (vpt <= 2)  bias_residual_ln_kernel<2><<<grid, threads, 0, stream>>>(hp, bp, rp, gp, btp, rows, n, e);
    else if (vpt <= 4)  bias_residual_ln_kernel<4><<<grid, threads, 0, stream>>>(hp, bp, rp, gp, btp, rows, n, e);
    else if (vpt <= 8)  bias_residual_ln_kernel<8><<<grid, threads, 0, stream>>>(hp, bp, rp, gp, btp, rows, n, e);
    else if (vpt <= 16) bias_residual_ln_kernel<16><<<grid, threads, 0, stream>>>(hp, bp, rp, gp, btp, rows, n, e);
    else                bias_residual_ln_kernel<32><<<grid, threads, 0, stream>>>(hp, bp, rp, gp, btp, rows, n, e);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return h;
}
"""

_ext = load_inline(
    name="kb_l2_6_gemm_residual_layernorm",
    cpp_sources=_cpp,
    cuda_sources=_cuda,
    functions=["bias_residual_layernorm_"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden, intermediate, eps):
        super().__init__()
        self.dense = nn.Linear(intermediate, hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, intermediate_states, residual):
        x2 = intermediate_states.reshape(-1, intermediate_states.shape[-1])
        h = torch.mm(x2, self.dense.weight.t())           # cuBLAS SGEMM, fresh buffer
        _ext.bias_residual_layernorm_(h, self.dense.bias, residual, self.norm.weight, self.norm.bias, float(self.norm.eps))
        return h.view(*intermediate_states.shape[:-1], h.shape[-1])
