"""Causal attention probabilities softmax(mask(q k^T * scale)): cuBLAS batched GEMM + ONE fused
scale / causal-mask / softmax kernel.

One block per score row i: only the causal prefix j <= i is read (half of the score matrix on
average), scaled, kept in registers, reduced (max, sum of exp) with warp shuffles, normalised and
written back in place over the GEMM output (our own temporary); the masked tail j > i is written as
exact zeros without being read. PyTorch builds a ones/triu mask, then runs the scale multiply,
masked_fill and softmax: three full read+write passes over BATCH x HEADS x SEQ x SEQ floats.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

if not torch.cuda.is_available():
    raise RuntimeError("31_Bmm_Scale_CausalMask_Softmax CUDA solution: needs a CUDA GPU (torch.cuda.is_available() is False)")

_cpp = "torch::Tensor causal_scale_softmax_(torch::Tensor s, double scale);"

_cuda = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
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
__device__ __forceinline__ float block_max(float v, float* sh) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    const int nw = (blockDim.x + 31) >> 5;
    if (wid == 0) { float t = lane < nw ? sh[lane] : -INFINITY; t = warp_max(t); if (lane == 0) sh[0] = t; }
    __syncthreads();
    return sh[0];
}

// s: (mats, S, S) contiguous scores, processed in place. Row r of a matrix keeps columns 0..r.
template <int VPT>
__global__ void __launch_bounds__(1024) causal_softmax_regs(float* __restrict__ s, int64_t total_rows, int S, float scale) {
    __shared__ float sh[32];
    for (int64_t gr = blockIdx.x; gr < total_rows; gr += gridDim.x) {
        const int i = (int)(gr % S);
        float* row = s + gr * (int64_t)S;
        const int valid = i + 1;
        float v[VPT];
        float m = -INFINITY;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = threadIdx.x + k * blockDim.x;
            if (c < valid) { v[k] = row[c] * scale; m = fmaxf(m, v[k]); }
        }
        m = block_max(m, sh);
        float sum = 0.f;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = threadIdx.x + k * blockDim.x;
            if (c < valid) { v[k] = expf(v[k] - m); sum += v[k]; }
        }
        const float inv = 1.0f / block_sum(sum, sh);
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = threadIdx.x + k * blockDim.x;
            if (c < valid) row[c] = v[k] * inv;
            else if (c < S) row[c] = 0.f;
        }
    }
}

// Rows longer than the register budget: online max/sum over the prefix, then a writing pass.
__global__ void causal_softmax_online(float* __restrict__ s, int64_t total_rows, int S, float scale) {
    __shared__ float shm[32], shs[32];
    for (int64_t gr = blockIdx.x; gr < total_rows; gr += gridDim.x) {
        const int i = (int)(gr % S);
        float* row = s + gr * (int64_t)S;
        float m = -3.0e38f, sum = 0.f;
        for (int c = threadIdx.x; c <= i; c += blockDim.x) {
            const float z = row[c] * scale;
            const float nm = fmaxf(m, z);
            sum = sum * expf(m - nm) + expf(z - nm);
            m = nm;
        }
        const float gm = block_max(m, shm);
        const float inv = 1.0f / block_sum(sum * expf(m - gm), shs);
        for (int c = threadIdx.x; c < S; c += blockDim.x)
            row[c] = (c <= i) ? expf(row[c] * scale - gm) * inv : 0.f;
    }
}

torch::Tensor causal_scale_softmax_(torch::Tensor s, double scale) {
    TORCH_CHECK(s.is_cuda() && s.is_contiguous() && s.scalar_type() == at::kFloat && s.dim() >= 2, "contiguous fp32 CUDA scores");
    const int64_t S = s.size(-1);
    TORCH_CHECK(s.size(-2) == S, "square score matrices expected");
    const int64_t total_rows = S ? s.numel() / S : 0;
    if (total_rows == 0) return s;
    const int grid = (int)std::min<int64_t>(total_rows, 1 << 20);
    auto stream = c10::cuda::getCurrentCUDAStream();
    float* sp = s.data_ptr<float>();
    const float sc = (float)scale;
    if (S <= 16384) {
        const int Si = (int)S;
        int threads = std::min(1024, std::max(32, ((Si + 7) / 8 + 31) / 32 * 32));   // ~8 values per thread
        const int vpt = (Si + threads - 1) / threads;
        if (vpt <= 1)       causal_softmax_regs<1><<<grid, threads, 0, stream>>>(sp, total_rows, Si, sc);
        else if (vpt <= 2)  causal_softmax_regs<2><<<grid, threads, 0, stream>>>(sp, total_rows, Si, sc);
        else if (vpt <= 4)  causal_softmax_regs<4><<<grid, threads, 0, stream>>>(sp, total_rows, Si, sc);
        else if (vpt <= 8)  causal_softmax_regs<8><<<grid, threads, 0, stream>>>(sp, total_rows, Si, sc);
        else                causal_softmax_regs<16><<<grid, threads, 0, stream>>>(sp, total_rows, Si, sc);
    } else {
        causal_softmax_online<<<grid, 1024, 0, stream>>>(sp, total_rows, (int)S, sc);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return s;
}
"""

_ext = load_inline(
    name="kb_l2_31_causal_scale_softmax",
    cpp_sources=_cpp,
    cuda_sources=_cuda,
    functions=["causal_scale_softmax_"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        scores = torch.matmul(q, k.transpose(-2, -1)).contiguous()   # cuBLAS batched SGEMM, fresh buffer
        _ext.causal_scale_softmax_(scores, float(q.shape[-1] ** -0.5))
        return scores
