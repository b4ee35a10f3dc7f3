"""Exclusive prefix sum along the last dimension in a single pass (one warp per row).

The reference's numbers come from ATen's cumsum (tile-wise Sklansky scan with a carried block
total, then a shifted copy through zeros_like + cat). A prefix sum in fp32 is order-sensitive
(over 16K elements the rounding drifts by ~1e-3, ten times the tolerance), so this kernel
reproduces ATen's association order exactly: the same tile width (ATen's get_log_num_threads_x_inner_scan
rule), carry added to the tile's first element, and the same Sklansky stages, but executed with
warp shuffles in registers instead of shared memory + __syncthreads, with the next tile's loads
prefetched while the current one is scanned, and the shift-by-one written directly. PyTorch runs
cumsum, zeros_like, a slice and cat (the full tensor is written and read twice); this reads x once
and writes y once.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

if not torch.cuda.is_available():
    raise RuntimeError("84_ExclusiveCumsum CUDA solution: needs a CUDA GPU (torch.cuda.is_available() is False)")

_cpp = "torch::Tensor aten_order_cumsum(torch::Tensor x, torch::Tensor mask, int64_t mode);"

_cuda = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

#define FULL 0xffffffffu

// MODE 0: inclusive cumsum, 1: exclusive (shifted by one, y[0] = 0), 2: inclusive cumsum of x * mask.
// One warp per row. A tile holds 32 * E elements (= 2 * num_threads_x of ATen's kernel); lane l owns
// elements c * 32 + l of the tile (c < E).
template <int E, int MODE>
__global__ void __launch_bounds__(256) aten_scan_rows(const float* __restrict__ x, const bool* __restrict__ mask,
                                                      float* __restrict__ y, int64_t rows, int64_t n) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); row < rows; row += warps) {
        const float* xr = x + row * n;
        const bool* mr = (MODE == 2) ? mask + row * n : nullptr;
        float* yr = y + row * n;
        if (MODE == 1 && lane == 0) yr[0] = 0.f;
        float nxt[E];
#pragma unroll
        for (int c = 0; c < E; ++c) {
            const int64_t idx = c * 32 + lane;
            float t = 0.f;
            if (idx < n) { t = __ldg(xr + idx); if (MODE == 2) t = t * (mr[idx] ? 1.f : 0.f); }
            nxt[c] = t;
        }
        float carry = 0.f;
        for (int64_t base = 0; base < n; base += 32 * E) {
            float v[E];
#pragma unroll
            for (int c = 0; c < E; ++c) v[c] = nxt[c];
            // prefetch the next tile while this one is scanned
#pragma unroll
            for (int c = 0; c < E; ++c) {
                const int64_t idx = base + 32 * E + c * 32 + lane;
                float t = 0.f;
                if (idx < n) { t = __ldg(xr + idx); if (MODE == 2) t = t * (mr[idx] ? 1.f : 0.f); }
                nxt[c] = t;
            }
            if (lane == 0) v[0] = v[0] + carry;          // ATen: row_buf[0] = row_buf[0] + block_total
            // Sklansky stages m = 0..4 inside each 32-element chunk
#pragma unroll
            for (int m = 0; m < 5; ++m) {
                const int s = 1 << m;
                const int src = ((lane >> (m + 1)) << (m + 1)) + s - 1;
#pragma unroll
                for (int c = 0; c < E; ++c) {
                    const float t = __shfl_sync(FULL, v[c], src);
                    if (lane & s) v[c] = v[c] + t;
                }
            }
            // Sklansky stages m >= 5 across chunks (the source is always lane 31 of an earlier chunk)
#pragma unroll
            for (int k = 0; (1 << k) < E; ++k) {
#pragma unroll
                for (int c = 0; c < E; ++c) {
                    if ((c >> k) & 1) {
                        const int sc = ((c >> (k + 1)) << (k + 1)) + (1 << k) - 1;
                        v[c] = v[c] + __shfl_sync(FULL, v[sc], 31);
                    }
                }
            }
#pragma unroll
            for (int c = 0; c < E; ++c) {
                const int64_t idx = base + c * 32 + lane;
                if (MODE == 1) { if (idx + 1 < n) yr[idx + 1] = v[c]; }
                else if (idx < n) yr[idx] = v[c];
            }
            carry = __shfl_sync(FULL, v[E - 1], 31);     // ATen: block_total = row_buf[2 * num_threads_x - 1]
        }
    }
}

// ATen's get_log_num_threads_x_inner_scan<uint32_t>, unsigned wrap-around included.
static uint32_t aten_log_threads_x(uint32_t num_rows, uint32_t row_size) {
    uint32_t lx = 0, ly = 0;
    while ((1u << lx) < row_size) ++lx;
    while ((1u << ly) < num_rows) ++ly;
    const uint32_t diff = lx - ly;
    const uint32_t l = (9u + diff) / 2u;
    return std::min(std::max(4u, l), 9u);
}

template <int MODE>
static void launch(const float* x, const bool* m, float* y, int64_t rows, int64_t n, int E, cudaStream_t st) {
    const int threads = 256;
    const int grid = (int)std::min<int64_t>((rows + 7) / 8, 132 * 64);
    switch (E) {
        case 1:  aten_scan_rows<1, MODE><<<grid, threads, 0, st>>>(x, m, y, rows, n); break;
        case 2:  aten_scan_rows<2, MODE><<<grid, threads, 0, st>>>(x, m, y, rows, n); break;
        case 4:  aten_scan_rows<4, MODE><<<grid, threads, 0, st>>>(x, m, y, rows, n); break;
        case 8:  aten_scan_rows<8, MODE><<<grid, threads, 0, st>>>(x, m, y, rows, n); break;
        case 16: aten_scan_rows<16, MODE><<<grid, threads, 0, st>>>(x, m, y, rows, n); break;
        default: aten_scan_rows<32, MODE><<<grid, threads, 0, st>>>(x, m, y, rows, n); break;
    }
}

torch::Tensor aten_order_cumsum(torch::Tensor x, torch::Tensor mask, int64_t mode) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() >= 1, "fp32 CUDA tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.size(-1);
    const int64_t rows = n ? xc.numel() / n : 0;
    if (rows == 0 || n == 0) return y;
    TORCH_CHECK(rows <= 0xffffffffLL && n <= 0xffffffffLL, "sizes must fit in uint32");
    torch::Tensor mc;
    const bool* mp = nullptr;
    if (mode == 2) {
        TORCH_CHECK(mask.is_cuda() && mask.scalar_type() == at::kBool && mask.sizes() == x.sizes(), "bool mask of x's shape");
        mc = mask.contiguous();
        mp = mc.data_ptr<bool>();
    }
    const int E = (int)((2u << aten_log_threads_x((uint32_t)rows, (uint32_t)n)) / 32u);   // tile = 2 * num_threads_x
    auto st = c10::cuda::getCurrentCUDAStream();
    if (mode == 0)      launch<0>(xc.data_ptr<float>(), mp, y.data_ptr<float>(), rows, n, E, st);
    else if (mode == 1) launch<1>(xc.data_ptr<float>(), mp, y.data_ptr<float>(), rows, n, E, st);
    else                launch<2>(xc.data_ptr<float>(), mp, y.data_ptr<float>(), rows, n, E, st);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="kb_l1_84_exclusive_cumsum_v2",
    cpp_sources=_cpp,
    cuda_sources=_cuda,
    functions=["aten_order_cumsum"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.aten_order_cumsum(x, x, 1)
