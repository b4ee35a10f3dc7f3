"""ConvNeXt block: custom CUDA for everything except the two pointwise GEMMs (cuBLAS).

1. dwconv7x7 + bias + channels-last LayerNorm + NCHW->NHWC in ONE kernel: a block computes one
   output image row for all channels into a shared-memory tile (odd row pitch, bank-conflict free),
   then one warp per pixel reduces mean and variance over the channels (exact two-pass, shuffles)
   and writes the normalised pixel as a contiguous (coalesced) NHWC row ready for the GEMM.
   PyTorch: cuDNN depthwise conv, a permute, a .contiguous() copy inside LayerNorm, LayerNorm.
2. fc1 on cuBLAS, then bias + exact GELU in one in-place pass (float4 when aligned).
3. fc2 on cuBLAS, then bias + layer scale + NHWC->NCHW transpose + residual add in ONE kernel
   (32x32 shared-memory transpose tiles, coalesced on both sides). PyTorch: bias inside addmm, a
   gamma multiply, a permute and a strided residual add.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

if not torch.cuda.is_available():
    raise RuntimeError("21_ConvNeXt_Block CUDA solution: needs a CUDA GPU (torch.cuda.is_available() is False)")

_cpp = r"""
torch::Tensor dwconv_ln_nhwc(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor g, torch::Tensor beta, double eps);
torch::Tensor bias_gelu_(torch::Tensor h, torch::Tensor b);
torch::Tensor scale_residual_nchw(torch::Tensor y, torch::Tensor b2, torch::Tensor gamma, torch::Tensor x);
"""

_cuda = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

// ---------------------------------------------------------------- 1. dwconv + LN + to NHWC
// grid (H, N); one block = one output row (all channels, all W pixels)
__global__ void dwconv_ln_kernel(const float* __restrict__ x, const float* __restrict__ wt, const float* __restrict__ bias,
                                 const float* __restrict__ g, const float* __restrict__ beta, float* __restrict__ out,
                                 int C, int H, int W, int pitch, float eps) {
    extern __shared__ float tile[];          // C x pitch
    const int h = blockIdx.x, n = blockIdx.y;
    const float* xn = x + (int64_t)n * C * H * W;
    for (int idx = threadIdx.x; idx < C * W; idx += blockDim.x) {
        const int c = idx / W, w = idx - c * W;
        const float* xc = xn + (int64_t)c * H * W;
        const float* kc = wt + c * 49;
        float acc = __ldg(bias + c);
#pragma unroll
        for (int i = 0; i < 7; ++i) {
            const int hh = h + i - 3;
            if (hh < 0 || hh >= H) continue;
            const float* xr = xc + (int64_t)hh * W;
#pragma unroll
            for (int j = 0; j < 7; ++j) {
                const int ww = w + j - 3;
                if (ww >= 0 && ww < W) acc = fmaf(__ldg(xr + ww), __ldg(kc + i * 7 + j), acc);
            }
        }
        tile[c * pitch + w] = acc;
    }
    __syncthreads();
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const float inv_c = 1.0f / (float)C;
    for (int w = wid; w < W; w += nw) {
        float s = 0.f;
        for (int c = lane; c < C; c += 32) s += tile[c * pitch + w];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        const float mean = s * inv_c;
        float s2 = 0.f;
        for (int c = lane; c < C; c += 32) { const float d = tile[c * pitch + w] - mean; s2 += d * d; }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s2 += __shfl_xor_sync(0xffffffffu, s2, o);
        const float rstd = rsqrtf(s2 * inv_c + eps);
        float* orow = out + (((int64_t)n * H + h) * W + w) * C;
        for (int c = lane; c < C; c += 32) orow[c] = (tile[c * pitch + w] - mean) * rstd * __ldg(g + c) + __ldg(beta + c);
    }
}

torch::Tensor dwconv_ln_nhwc(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor g, torch::Tensor beta, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() == 4, "fp32 CUDA NCHW input");
    auto xc = x.contiguous(), wc = w.contiguous(), bc = b.contiguous(), gc = g.contiguous(), btc = beta.contiguous();
    const int N = (int)xc.size(0), C = (int)xc.size(1), H = (int)xc.size(2), W = (int)xc.size(3);
    TORCH_CHECK(wc.numel() == (int64_t)C * 49, "expected a 7x7 depthwise kernel");
    auto out = torch::empty({(int64_t)N * H * W, C}, xc.options());
    if (out.numel() == 0) return out;
    const int pitch = (W % 2 == 0) ? W + 1 : W;       // odd pitch: conflict-free column walks
    const size_t smem = (size_t)C * pitch * sizeof(float);
    TORCH_CHECK(smem <= 48 * 1024, "row tile too large for shared memory");
    TORCH_CHECK(H <= 65535 && N <= 65535, "grid too large");
    dim3 grid(H, N);
    dwconv_ln_kernel<<<grid, 256, smem, c10::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), wc.data_ptr<float>(),
        bc.data_ptr<float>(), gc.data_ptr<float>(), btc.data_ptr<float>(), out.data_ptr<float>(), C, H, W, pitch, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

// ---------------------------------------------------------------- 2. bias + exact GELU, in place
__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__global__ void bias_gelu_vec4(float4* __restrict__ h, const float4* __restrict__ b, int64_t n4, int cols4) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 v = h[i];
        const float4 bb = __ldg(b + (int)(i % cols4));
        v.x = gelu_erf(v.x + bb.x); v.y = gelu_erf(v.y + bb.y); v.z = gelu_erf(v.z + bb.z); v.w = gelu_erf(v.w + bb.w);
        h[i] = v;
    }
}
__global__ void bias_gelu_scalar(float* __restrict__ h, const float* __restrict__ b, int64_t n, int cols) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        h[i] = gelu_erf(h[i] + __ldg(b + (int)(i % cols)));
}

torch::Tensor bias_gelu_(torch::Tensor h, torch::Tensor b) {
    TORCH_CHECK(h.is_cuda() && h.is_contiguous() && h.scalar_type() == at::kFloat, "contiguous fp32 CUDA tensor");
    const int cols = (int)h.size(-1);
    const int64_t n = h.numel();
    if (n == 0) return h;
    auto bc = b.contiguous();
    auto stream = c10::cuda::getCurrentCUDAStream();
    const bool vec = (cols % 4 == 0) && (reinterpret_cast<uintptr_t>(h.data_ptr<float>()) % 16 == 0) &&
                     (reinterpret_cast<uintptr_t>(bc.data_ptr<float>()) % 16 == 0);
    if (vec) {
        const int64_t n4 = n / 4;
        const int grid = (int)std::min<int64_t>((n4 + 255) / 256, 132 * 16);
        bias_gelu_vec4<<<grid, 256, 0, stream>>>(reinterpret_cast<float4*>(h.data_ptr<float>()),
            reinterpret_cast<const float4*>(bc.data_ptr<float>()), n4, cols / 4);
    } else {
        const int grid = (int)std::min<int64_t>((n + 255) / 256, 132 * 16);
        bias_gelu_scalar<<<grid, 256, 0, stream>>>(h.data_ptr<float>(), bc.data_ptr<float>(), n, cols);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return h;
}

// ---------------------------------------------------------------- 3. bias + gamma + transpose + residual
// y: (N, HW, C); x, out: (N, C, HW). grid (ceil(HW/32), ceil(C/32), N), block (32, 8)
__global__ void scale_residual_kernel(const float* __restrict__ y, const float* __restrict__ b2, const float* __restrict__ gamma,
                                      const float* __restrict__ x, float* __restrict__ out, int C, int HW) {
    __shared__ float t[32][33];
    const int p0 = blockIdx.x * 32, c0 = blockIdx.y * 32;
    const int64_t n = blockIdx.z;
    const float* yn = y + n * (int64_t)HW * C;
    for (int k = threadIdx.y; k < 32; k += 8) {
        const int p = p0 + k, c = c0 + threadIdx.x;
        t[k][threadIdx.x] = (p < HW && c < C) ? yn[(int64_t)p * C + c] : 0.f;
    }
    __syncthreads();
    const float* xn = x + n * (int64_t)C * HW;
    float* on = out + n * (int64_t)C * HW;
    for (int k = threadIdx.y; k < 32; k += 8) {
        const int c = c0 + k, p = p0 + threadIdx.x;
        if (c < C && p < HW) {
            const int64_t o = (int64_t)c * HW + p;
            on[o] = __ldg(xn + o) + __ldg(gamma + c) * (t[threadIdx.x][k] + __ldg(b2 + c));
        }
    }
}

torch::Tensor scale_residual_nchw(torch::Tensor y, torch::Tensor b2, torch::Tensor gamma, torch::Tensor x) {
    TORCH_CHECK(y.is_cuda() && x.is_cuda() && x.dim() == 4, "CUDA tensors");
    auto yc = y.contiguous(), xc = x.contiguous(), bc = b2.contiguous(), gc = gamma.contiguous();
    const int N = (int)xc.size(0), C = (int)xc.size(1), HW = (int)(xc.size(2) * xc.size(3));
    TORCH_CHECK(yc.numel() == xc.numel(), "shape mismatch");
    auto out = torch::empty_like(xc);
    if (out.numel() == 0) return out;
    TORCH_CHECK(N <= 65535, "batch too large for grid.z");
    dim3 grid((HW + 31) / 32, (C + 31) / 32, N);
    scale_residual_kernel<<<grid, dim3(32, 8), 0, c10::cuda::getCurrentCUDAStream()>>>(yc.data_ptr<float>(), bc.data_ptr<float>(),
        gc.data_ptr<float>(), xc.data_ptr<float>(), out.data_ptr<float>(), C, HW);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="kb_l3_21_convnext_block",
    cpp_sources=_cpp,
    cuda_sources=_cuda,
    functions=["dwconv_ln_nhwc", "bias_gelu_", "scale_residual_nchw"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim, mlp_ratio, layer_scale_init):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.fc1 = nn.Linear(dim, mlp_ratio * dim)
        self.fc2 = nn.Linear(mlp_ratio * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), float(layer_scale_init)))

    def forward(self, x):
        a = _ext.dwconv_ln_nhwc(x, self.dwconv.weight, self.dwconv.bias, self.norm.weight, self.norm.bias, float(self.norm.eps))
        h = torch.mm(a, self.fc1.weight.t())              # cuBLAS SGEMM (N*H*W, 4C)
        _ext.bias_gelu_(h, self.fc1.bias)
        y = torch.mm(h, self.fc2.weight.t())              # cuBLAS SGEMM (N*H*W, C)
        return _ext.scale_residual_nchw(y, self.fc2.bias, self.gamma, x)
