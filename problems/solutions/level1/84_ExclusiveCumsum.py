"""Exclusive prefix sum along the last dimension in a single pass.

One block per row walks the row in tiles of 4096 elements: a coalesced load into (bank-conflict
padded) shared memory, an 8-element sequential scan per thread, a warp-shuffle scan of the thread
totals and a scan of the warp totals, then a coalesced store. The running carry between tiles is
kept in double so long rows do not drift. PyTorch runs cumsum, then zeros_like, slicing and cat
(four kernels, the full tensor read and written twice); this reads x once and writes y once.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

if not torch.cuda.is_available():
    raise RuntimeError("84_ExclusiveCumsum CUDA solution: needs a CUDA GPU (torch.cuda.is_available() is False)")

_cpp = "torch::Tensor exclusive_cumsum(torch::Tensor x);"

_cuda = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

constexpr int THREADS = 512;
constexpr int VPT = 8;
constexpr int TILE = THREADS * VPT;            // 4096 elements per tile
__device__ __forceinline__ int pad(int i) { return i + (i >> 5); }   // one spare slot every 32 floats

__global__ void __launch_bounds__(THREADS) exclusive_scan_rows(const float* __restrict__ x, float* __restrict__ y,
                                                               int64_t rows, int64_t n) {
    __shared__ float tile[TILE + TILE / 32];
    __shared__ float warp_tot[THREADS / 32];
    const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* xr = x + row * n;
        float* yr = y + row * n;
        double carry = 0.0;
        for (int64_t base = 0; base < n; base += TILE) {
            const int64_t lim = n - base;
#pragma unroll
            for (int k = 0; k < VPT; ++k) {
                const int i = tid + k * THREADS;
                tile[pad(i)] = (i < lim) ? __ldg(xr + base + i) : 0.f;
            }
            __syncthreads();
            // sequential inclusive scan of this thread's VPT consecutive elements
            float v[VPT];
            float run = 0.f;
#pragma unroll
            for (int k = 0; k < VPT; ++k) { run += tile[pad(tid * VPT + k)]; v[k] = run; }
            // inclusive warp scan of thread totals
            float t = run;
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                const float u = __shfl_up_sync(0xffffffffu, t, o);
                if (lane >= o) t += u;
            }
            if (lane == 31) warp_tot[wid] = t;
            __syncthreads();
            if (wid == 0) {
                float w = lane < THREADS / 32 ? warp_tot[lane] : 0.f;
#pragma unroll
                for (int o = 1; o < 32; o <<= 1) {
                    const float u = __shfl_up_sync(0xffffffffu, w, o);
                    if (lane >= o) w += u;
                }
                if (lane < THREADS / 32) warp_tot[lane] = w;   // inclusive scan of warp totals
            }
            __syncthreads();
            const float warp_prefix = wid ? warp_tot[wid - 1] : 0.f;
            const float thread_prefix = warp_prefix + (t - run);         // exclusive prefix within the tile
            const float tile_total = warp_tot[THREADS / 32 - 1];
            const double pre = carry + (double)thread_prefix;
            // exclusive: element k gets the sum of everything before it
            float prev = 0.f;
#pragma unroll
            for (int k = 0; k < VPT; ++k) { tile[pad(tid * VPT + k)] = (float)(pre + (double)prev); prev = v[k]; }
            __syncthreads();
#pragma unroll
            for (int k = 0; k < VPT; ++k) {
                const int i = tid + k * THREADS;
                if (i < lim) yr[base + i] = tile[pad(i)];
            }
            carry += (double)tile_total;
            __syncthreads();
        }
    }
}

torch::Tensor exclusive_cumsum(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() >= 1, "fp32 CUDA tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.size(-1);
    const int64_t rows = n ? xc.numel() / n : 0;
    if (rows == 0 || n == 0) return y;
    const int grid = (int)std::min<int64_t>(rows, 1 << 20);
    exclusive_scan_rows<<<grid, THREADS, 0, c10::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), y.data_ptr<float>(), rows, n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="kb_l1_84_exclusive_cumsum",
    cpp_sources=_cpp,
    cuda_sources=_cuda,
    functions=["exclusive_cumsum"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.exclusive_cumsum(x)
