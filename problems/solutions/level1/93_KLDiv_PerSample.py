"""Per-sample KL divergence sum_j p_j * (log p_j - log_q_j) in one pass per row (Triton).

One program per row streams both inputs once, applies the xlogy convention (0 where p == 0),
accumulates in a register vector and reduces once. PyTorch's kl_div(reduction="none") writes the
full BATCH x CLASSES elementwise tensor and .sum(dim=1) reads it back; this writes only BATCH floats.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _kl_rows(logq_ptr, p_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < n_cols
        lq = tl.load(logq_ptr + base + cols, mask=m, other=0.0)
        p = tl.load(p_ptr + base + cols, mask=m, other=0.0)
        safe_p = tl.where(p > 0.0, p, 1.0)
        term = tl.where(p > 0.0, p * tl.log(safe_p), 0.0) - p * lq
        acc += tl.where(m, term, 0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, log_q, p):
        log_q = log_q.contiguous()
        p = p.contiguous()
        rows, n = log_q.shape
        out = torch.empty(rows, device=log_q.device, dtype=log_q.dtype)
        if rows == 0:
            return out
        BLOCK = min(2048, max(128, triton.next_power_of_2(n)))
        _kl_rows[(rows,)](log_q, p, out, n, BLOCK=BLOCK, num_warps=8 if BLOCK >= 2048 else 4)
        return out
