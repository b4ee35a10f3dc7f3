"""Small pure helpers over (nested) tensors: dtypes, moving, flattening, sizes."""
from __future__ import annotations

import torch

from ..scoring.protocols import KBENCH_TOLERANCE

_Tensor = torch.Tensor  # bound at import: the worker imports this module before any candidate code

PRECISIONS = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}

# Tolerances per precision (docs/JUDGING.md): fp32 1e-4, bf16/fp16 1e-2, atol = rtol (the table is kbench_lib.scoring.protocols)
TOLERANCE = KBENCH_TOLERANCE


def dtype_of(precision: str) -> torch.dtype:
    try:
        return PRECISIONS[precision]
    except KeyError:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, not {precision!r}") from None


def cast_floating(obj, dtype: torch.dtype):
    """Cast every floating tensor in a list/tuple to ``dtype``; other values pass unchanged."""
    if isinstance(obj, torch.Tensor):
        return obj.to(dtype) if obj.is_floating_point() else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(cast_floating(o, dtype) for o in obj)
    return obj


def to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(o, device) for o in obj)
    return obj


def as_output_list(out) -> list:
    """A forward's result as a list (a single tensor becomes a one-element list)."""
    if isinstance(out, (list, tuple)):
        return list(out)
    return [out]


def tensors_in(obj) -> list[torch.Tensor]:
    """Every tensor of a tree of lists, tuples and dicts, in order."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in tensors_in(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in tensors_in(o)]
    return []


def nbytes(obj) -> int:
    return sum(t.numel() * t.element_size() for t in tensors_in(obj))


def require_grad(inputs) -> list:
    """Marks every floating-point tensor among ``inputs`` as requiring a gradient (the leaves a
    backward task differentiates) and returns them, in order."""
    leaves = [t for t in inputs if isinstance(t, _Tensor) and t.is_floating_point()]
    for t in leaves:
        t.requires_grad_(True)
    return leaves


def clone_tensors(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, (list, tuple)):
        return type(obj)(clone_tensors(o) for o in obj)
    return obj
