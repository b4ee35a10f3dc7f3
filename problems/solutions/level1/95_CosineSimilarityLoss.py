"""1 - cosine_similarity(a, b, dim=1) in one pass: per row, the dot product and both squared norms
are accumulated together from float4 loads (scalar head/tail for odd lengths) and reduced with warp
shuffles; the epilogue applies PyTorch's formula dot / (max(|a|, eps) * max(|b|, eps)).

PyTorch runs separate norm, clamp, divide, multiply and sum kernels (several passes, temporaries of
the full input size); this reads a and b exactly once.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

if not torch.cuda.is_available():
    raise RuntimeError("95_CosineSimilarityLoss CUDA solution: needs a CUDA GPU (torch.cuda.is_available() is False)")

_cpp = "torch::Tensor cosine_loss(torch::Tensor a, torch::Tensor b, double eps);"

_cuda = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Three simultaneous block sums; sh must hold 3 * 32 floats.
__device__ __forceinline__ void block_sum3(float& a, float& b, float& c, float* sh) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    a = warp_sum(a); b = warp_sum(b); c = warp_sum(c);
    __syncthreads();
    if (lane == 0) { sh[wid] = a; sh[32 + wid] = b; sh[64 + wid] = c; }
    __syncthreads();
    const int nw = (blockDim.x + 31) >> 5;
    if (wid == 0) {
        float x = lane < nw ? sh[lane] : 0.f, y = lane < nw ? sh[32 + lane] : 0.f, z = lane < nw ? sh[64 + lane] : 0.f;
        x = warp_sum(x); y = warp_sum(y); z = warp_sum(z);
        if (lane == 0) { sh[0] = x; sh[32] = y; sh[64] = z; }
    }
    __syncthreads();
    a = sh[0]; b = sh[32]; c = sh[64];
}

__global__ void cosine_rows(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ out,
                            int64_t rows, int64_t n, bool can_vec, float eps) {
    __shared__ float sh[96];
    const int tid = threadIdx.x, bs = blockDim.x;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* a = A + row * n;
        const float* b = B + row * n;
        int64_t head = can_vec ? (int64_t)((((16 - ((uintptr_t)a & 15)) & 15)) >> 2) : n;
        if (head > n) head = n;
        float dot = 0.f, saa = 0.f, sbb = 0.f;
        for (int64_t i = tid; i < head; i += bs) { const float x = a[i], y = b[i]; dot += x * y; saa += x * x; sbb += y * y; }
        const int64_t nv = (n - head) >> 2;
        const float4* a4 = reinterpret_cast<const float4*>(a + head);
        const float4* b4 = reinterpret_cast<const float4*>(b + head);
        for (int64_t i = tid; i < nv; i += bs) {
            const float4 x = __ldg(a4 + i), y = __ldg(b4 + i);
            dot += x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
            saa += x.x * x.x + x.y * x.y + x.z * x.z + x.w * x.w;
            sbb += y.x * y.x + y.y * y.y + y.z * y.z + y.w * y.w;
        }
        for (int64_t i = head + nv * 4 + tid; i < n; i += bs) { const float x = a[i], y = b[i]; dot += x * y; saa += x * x; sbb += y * y; }
        block_sum3(dot, saa, sbb, sh);
        if (tid == 0) {
            const float na = fmaxf(sqrtf(saa), eps), nb = fmaxf(sqrtf(sbb), eps);
            out[row] = 1.0f - dot / (na * nb);
        }
    }
}

torch::Tensor cosine_loss(torch::Tensor a, torch::Tensor b, double eps) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.sizes() == b.sizes() && a.dim() == 2, "2-D CUDA tensors of one shape");
    TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat, "fp32 only");
    auto ac = a.contiguous(), bc = b.contiguous();
    const int64_t rows = ac.size(0), n = ac.size(1);
    auto out = torch::empty({rows}, ac.options());
    if (rows == 0) return out;
    const bool can_vec = ((reinterpret_cast<uintptr_t>(ac.data_ptr<float>()) - reinterpret_cast<uintptr_t>(bc.data_ptr<float>())) % 16) == 0;
    const int threads = n >= 8192 ? 512 : (n >= 2048 ? 256 : 128);
    const int grid = (int)std::min<int64_t>(rows, 1 << 20);
    cosine_rows<<<grid, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(ac.data_ptr<float>(), bc.data_ptr<float>(),
        out.data_ptr<float>(), rows, n, can_vec, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="kb_l1_95_cosine_loss",
    cpp_sources=_cpp,
    cuda_sources=_cuda,
    functions=["cosine_loss"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, a, b):
        return _ext.cosine_loss(a, b, float(self.eps))
