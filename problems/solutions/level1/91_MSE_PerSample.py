"""Per-sample mean squared error in one pass: one block per sample, float4 loads of both inputs
(with a scalar head/tail so odd row lengths stay vectorised), warp-shuffle + shared-memory reduction.

PyTorch writes the full (BATCH, FEATURES) squared-error tensor with mse_loss(reduction="none") and
reads it back for .mean(dim=1); this reads each input once and writes only BATCH floats.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

if not torch.cuda.is_available():
    raise RuntimeError("91_MSE_PerSample CUDA solution: needs a CUDA GPU (torch.cuda.is_available() is False)")

_cpp = "torch::Tensor mse_per_sample(torch::Tensor p, torch::Tensor t);"

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
    if (wid == 0) {
        float t = (lane < nw) ? sh[lane] : 0.f;
        t = warp_sum(t);
        if (lane == 0) sh[0] = t;
    }
    __syncthreads();
    return sh[0];
}

__global__ void mse_rows(const float* __restrict__ P, const float* __restrict__ T, float* __restrict__ out,
                         int64_t rows, int64_t n, bool can_vec) {
    __shared__ float sh[32];
    const int tid = threadIdx.x, bs = blockDim.x;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* p = P + row * n;
        const float* t = T + row * n;
        // p and t share their misalignment (checked on the host), so one head serves both.
        int64_t head = can_vec ? (int64_t)((((16 - ((uintptr_t)p & 15)) & 15)) >> 2) : n;
        if (head > n) head = n;
        float acc = 0.f;
        for (int64_t i = tid; i < head; i += bs) { const float d = p[i] - t[i]; acc += d * d; }
        const int64_t nv = (n - head) >> 2;
        const float4* p4 = reinterpret_cast<const float4*>(p + head);
        const float4* t4 = reinterpret_cast<const float4*>(t + head);
        for (int64_t i = tid; i < nv; i += bs) {
            const float4 a = __ldg(p4 + i), b = __ldg(t4 + i);
            const float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z, dw = a.w - b.w;
            acc += dx * dx + dy * dy + dz * dz + dw * dw;
        }
        for (int64_t i = head + nv * 4 + tid; i < n; i += bs) { const float d = p[i] - t[i]; acc += d * d; }
        acc = block_sum(acc, sh);
        if (tid == 0) out[row] = acc / (float)n;
    }
}

torch::Tensor mse_per_sample(torch::Tensor p, torch::Tensor t) {
    TORCH_CHECK(p.is_cuda() && t.is_cuda() && p.sizes() == t.sizes() && p.dim() == 2, "2-D CUDA tensors of one shape");
    TORCH_CHECK(p.scalar_type() == at::kFloat && t.scalar_type() == at::kFloat, "fp32 only");
    auto pc = p.contiguous(), tc = t.contiguous();
    const int64_t rows = pc.size(0), n = pc.size(1);
    auto out = torch::empty({rows}, pc.options());
    if (rows == 0) return out;
    if (n == 0) { out.fill_(std::numeric_limits<float>::quiet_NaN()); return out; }
    const bool can_vec = ((reinterpret_cast<uintptr_t>(pc.data_ptr<float>()) - reinterpret_cast<uintptr_t>(tc.data_ptr<float>())) % 16) == 0;
    const int threads = n >= 8192 ? 512 : (n >= 2048 ? 256 : 128);
    const int grid = (int)std::min<int64_t>(rows, 1 << 20);
    mse_rows<<<grid, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(pc.data_ptr<float>(), tc.data_ptr<float>(),
        out.data_ptr<float>(), rows, n, can_vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="kb_l1_91_mse_per_sample",
    cpp_sources=_cpp,
    cuda_sources=_cuda,
    functions=["mse_per_sample"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return _ext.mse_per_sample(predictions, targets)
