"""Query projection with per-head RMSNorm (QK-norm) and rotary embedding: cuBLAS GEMM + ONE fused
epilogue kernel.

One block per token stages the token's HEADS x HEAD_DIM projection in shared memory, one warp per
head reduces the sum of squares with shuffles, and every element is then normalised, scaled by the
norm weight and rotated (q * cos + rotate_half(q) * sin, the partner element read from shared
memory) and written back in place over the GEMM output. PyTorch runs pow, mean, add, rsqrt, two
muls, chunk/neg/cat for rotate_half, two muls with cos/sin and an add: about ten passes and
several temporaries of the full activation.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

if not torch.cuda.is_available():
    raise RuntimeError("30_Gemm_HeadRMSNorm_RoPE CUDA solution: needs a CUDA GPU (torch.cuda.is_available() is False)")

_cpp = "torch::Tensor head_rmsnorm_rope_(torch::Tensor q, torch::Tensor w, torch::Tensor cos, torch::Tensor sin, int64_t seq, int64_t heads, int64_t head_dim, double eps);"

_cuda = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

// q: (tokens, heads * D) in place; cos/sin: (>= seq, D) rows indexed by the token's position.
__global__ void head_rmsnorm_rope_kernel(float* __restrict__ q, const float* __restrict__ w,
                                         const float* __restrict__ cosb, const float* __restrict__ sinb,
                                         int64_t tokens, int seq, int heads, int D, float eps) {
    extern __shared__ float smem[];
    float* row = smem;                 // heads * D
    float* inv = smem + heads * D;     // heads
    const int width = heads * D;
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int half = D / 2;
    const float inv_d = 1.0f / (float)D;
    for (int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
        float* qr = q + t * width;
        const int pos = (int)(t % seq);
        for (int i = threadIdx.x; i < width; i += blockDim.x) row[i] = qr[i];
        __syncthreads();
        for (int h = wid; h < heads; h += nw) {
            float ss = 0.f;
            for (int d = lane; d < D; d += 32) { const float v = row[h * D + d]; ss += v * v; }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
            if (lane == 0) inv[h] = rsqrtf(ss * inv_d + eps);
        }
        __syncthreads();
        const float* cr = cosb + (int64_t)pos * D;
        const float* sr = sinb + (int64_t)pos * D;
        for (int i = threadIdx.x; i < width; i += blockDim.x) {
            const int h = i / D, d = i - h * D;
            const float s = inv[h];
            const float qn = row[i] * s * __ldg(w + d);
            float rot;
            if (d < half) { const int p = d + half; rot = -(row[h * D + p] * s * __ldg(w + p)); }
            else          { const int p = d - half; rot = row[h * D + p] * s * __ldg(w + p); }
            qr[i] = qn * __ldg(cr + d) + rot * __ldg(sr + d);
        }
        __syncthreads();
    }
}

torch::Tensor head_rmsnorm_rope_(torch::Tensor q, torch::Tensor w, torch::Tensor cos, torch::Tensor sin,
                                 int64_t seq, int64_t heads, int64_t head_dim, double eps) {
    TORCH_CHECK(q.is_cuda() && q.is_contiguous() && q.scalar_type() == at::kFloat, "contiguous fp32 CUDA GEMM output");
    TORCH_CHECK(head_dim % 2 == 0, "head_dim must be even for rotate_half");
    const int64_t width = heads * head_dim;
    const int64_t tokens = width ? q.numel() / width : 0;
    if (tokens == 0) return q;
    auto wc = w.contiguous(), cc = cos.contiguous(), sc = sin.contiguous();
    TORCH_CHECK(cc.numel() >= seq * head_dim && sc.numel() >= seq * head_dim, "cos/sin tables too short");
    const size_t smem = (size_t)(width + heads) * sizeof(float);
    TORCH_CHECK(smem <= 48 * 1024, "token row too wide for shared memory");
    const int threads = 256;
    const int grid = (int)std::min<int64_t>(tokens, 1 << 20);
    head_rmsnorm_rope_kernel<<<grid, threads, smem, c10::cuda::getCurrentCUDAStream()>>>(
        q.data_ptr<float>(), wc.data_ptr<float>(), cc.data_ptr<float>(), sc.data_ptr<float>(),
        tokens, (int)seq, (int)heads, (int)head_dim, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return q;
}
"""

_ext = load_inline(
    name="kb_l2_30_head_rmsnorm_rope",
    cpp_sources=_cpp,
    cuda_sources=_cuda,
    functions=["head_rmsnorm_rope_"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim, heads, head_dim, seq_len, rope_theta):
        super().__init__()
        self.q_proj = nn.Linear(dim, heads * head_dim, bias=False)
        self.q_norm_weight = nn.Parameter(torch.ones(head_dim))
        self.heads = heads
        self.head_dim = head_dim
        inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        freqs = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos()[:, None, :])
        self.register_buffer("sin", emb.sin()[:, None, :])

    def forward(self, x):
        b, s, _ = x.shape
        q = torch.mm(x.reshape(b * s, -1), self.q_proj.weight.t())     # cuBLAS SGEMM, fresh buffer
        _ext.head_rmsnorm_rope_(q, self.q_norm_weight, self.cos, self.sin, s, self.heads, self.head_dim, 1e-6)
        return q.view(b, s, self.heads, self.head_dim)
