"""The error the reference itself makes in reduced numerics (TF32, and fp16 or bf16 under autocast):
what tells reduced precision (TF32 matrix products, half-precision compute, approximate arithmetic
of that size) from a wrong kernel (:mod:`kbench_lib.scoring.protocols`).

On CUDA the reference runs with TF32 allowed for cuBLAS and cuDNN, as
``torch.backends.cuda.matmul.allow_tf32`` and ``torch.backends.cudnn.allow_tf32`` make it. On a
machine without a GPU there is no TF32 unit: :class:`EmulatedTF32` rounds the operands of the
matrix products and convolutions the reference runs (``mm``, ``addmm``, ``bmm``, ``baddbmm``,
``convolution`` and the attention kernels) to TF32's 10-bit mantissa, round to nearest even, and
computes them in fp32: the same arithmetic TF32 hardware does, in the order the CPU sums.

This runs in the judge's process on the reference only, never on a candidate.
"""
from __future__ import annotations

import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_ROUNDED = {"mm", "addmm", "bmm", "baddbmm", "convolution", "_scaled_dot_product_flash_attention_for_cpu",
            "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
            "_scaled_dot_product_cudnn_attention", "_convolution"}
# which positional arguments are the product's operands (the rest, e.g. addmm's bias, stay fp32)
_OPERANDS = {"addmm": (1, 2), "baddbmm": (1, 2), "convolution": (0, 1), "_convolution": (0, 1)}


def round_to_tf32(t: torch.Tensor) -> torch.Tensor:
    """``t`` (fp32) with its mantissa rounded to TF32's 10 bits, round to nearest even; other
    dtypes and non-finite values unchanged."""
    if t.dtype != torch.float32:
        return t
    bits = t.contiguous().view(torch.int32)
    lsb = (bits >> 13) & 1
    rounded = ((bits + 0xFFF + lsb) & ~0x1FFF).view(torch.float32).view(t.shape)
    return torch.where(torch.isfinite(t), rounded, t)


class EmulatedTF32(TorchDispatchMode):
    """Runs what is inside it with the operands of matrix products and convolutions rounded to TF32."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._overloadpacket.__name__
        if name in _ROUNDED:
            which = _OPERANDS.get(name, (0, 1, 2) if "attention" in name else (0, 1))
            args = tuple(round_to_tf32(a) if i in which and isinstance(a, torch.Tensor) else a for i, a in enumerate(args))
        return func(*args, **kwargs)


@contextlib.contextmanager
def enabled(device: str):
    """TF32 for what runs inside: the hardware's on CUDA, :class:`EmulatedTF32` elsewhere. The
    judge's own settings (TF32 off) are restored after."""
    from ..suite.reference import set_flags

    if str(device).startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        try:
            yield
        finally:
            set_flags()
    else:
        with EmulatedTF32():
            yield


# the reduced numerics the reference is run under to measure an envelope, narrowest first: TF32 for
# cuBLAS and cuDNN (:func:`enabled`), then autocast to fp16 and to bf16 (``torch.autocast``: matrix
# products and convolutions in half precision, reductions and elementwise ops as autocast keeps them)
NUMERICS = ("tf32", "fp16", "bf16")


@contextlib.contextmanager
def reduced(numerics: str, device: str):
    """What runs inside in ``numerics`` (:data:`NUMERICS`)."""
    if numerics == "tf32":
        with enabled(device):
            yield
        return
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[numerics]
    with torch.autocast(device_type="cuda" if str(device).startswith("cuda") else "cpu", dtype=dtype):
        yield


def reference_error(problem, spec, expected: list, device: str, precision: str, numerics: str = "tf32") -> float | None:
    """``tol_needed`` of the reference run in ``numerics`` (:data:`NUMERICS`) against its own fp32
    outputs ``expected``, on the input set of ``spec`` (a :class:`kbench_lib.judging.plan.CaseSpec`,
    in its configuration's mode); None for a task that is not fp32 or whose run cannot be compared
    (backward tasks compare outputs only here)."""
    from ..measure.compare import measure_outputs
    from ..suite.reference import build_reference, in_mode

    if precision != "fp32":
        return None
    model, _, inputs = build_reference(problem, spec.config, spec.init_seed, spec.input_seed, device, precision)
    with torch.no_grad(), in_mode(model, spec.config.mode), reduced(numerics, device):
        out = model(*inputs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    # autocast returns half-precision tensors where the last op ran in it: compared as fp32, as a cast back would give
    outs = [o.detach().float() if isinstance(o, torch.Tensor) and o.dtype in (torch.float16, torch.bfloat16) else
            (o.detach() if isinstance(o, torch.Tensor) else o) for o in outs]
    cmp_dev = device if str(device).startswith("cuda") else None
    m = measure_outputs(expected, outs, device=cmp_dev)
    return None if m.hard is not None else m.tol_needed


__all__ = ["NUMERICS", "EmulatedTF32", "enabled", "reduced", "reference_error", "round_to_tf32"]
