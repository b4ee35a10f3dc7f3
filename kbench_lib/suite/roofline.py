"""Speed of light: FLOPs and minimal bytes of a problem, peak rates of devices, the bound they give.

FLOPs are counted by PyTorch's FLOP counter (``torch.utils.flop_counter.FlopCounterMode``) over
the reference forward (and backward, for backward tasks), run on the ``meta`` device so that no
arithmetic is done and any size can be counted on any machine. Minimal bytes are every input,
parameter and output touched once. ``sol_ms = max(flops / peak_flops, bytes / peak_bandwidth)``.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from .devices import DEVICES, DeviceSpec, spec_for
from .problems import Problem, discover_with_errors, instantiate
from ..core.seeding import SEEDED
from ..measure.tensors import require_grad


def _build(problem: Problem, overrides: dict | None, device: str = "meta"):
    ns = instantiate(problem, overrides)
    with SEEDED:  # seeds the global generators: never beside another thread's seeded draw
        torch.manual_seed(0)
        init_inputs = list(ns["get_init_inputs"]())
        with torch.device(device):
            model = ns["Model"](*init_inputs)
            inputs = list(ns["get_inputs"]())
    inputs = [t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs]
    return model, inputs, ns


def _bytes(ts) -> int:
    return sum(t.numel() * t.element_size() for t in ts if isinstance(t, torch.Tensor))


def input_set_bytes(problem: Problem, overrides: dict | None = None) -> int:
    """The bytes of one input set of ``problem`` (``get_inputs()``), sized on the meta device."""
    return _bytes(_build(problem, overrides)[1])


def count(problem: Problem, overrides: dict | None = None, dtype_bytes: int | None = None) -> dict:
    """{'flops', 'bytes'} of one configuration (forward, plus backward for backward tasks).

    Counted on the meta device; a problem with data-dependent shapes (``nonzero``, boolean
    masks) cannot run there and is counted by running it for real on the CPU."""
    try:
        return _count(problem, overrides, dtype_bytes, "meta")
    except (NotImplementedError, RuntimeError):
        return _count(problem, overrides, dtype_bytes, "cpu")


def _count(problem: Problem, overrides: dict | None, dtype_bytes: int | None, device: str) -> dict:
    model, inputs, ns = _build(problem, overrides, device)
    backward = problem.task == "backward"
    if backward:
        require_grad(inputs)
    counter = FlopCounterMode(display=False)
    with counter:
        out = model(*inputs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        if backward:
            torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
    params = list(model.parameters()) + list(model.buffers())
    nbytes = _bytes(inputs) + _bytes(params) + _bytes(outs)
    if backward:  # read the upstream gradient, write a gradient per floating input and parameter
        nbytes += _bytes(outs) + _bytes([t for t in inputs if isinstance(t, torch.Tensor) and t.is_floating_point()]) + _bytes(list(model.parameters()))
    if dtype_bytes:
        nbytes = nbytes * dtype_bytes // 4
    flops = int(counter.get_total_flops())
    # a problem whose reference is honest but wasteful (diag(a) @ B is a row scaling) states the
    # arithmetic the task really needs; the bound must never exceed what a correct kernel needs
    hint = ns.get("min_flops")
    if callable(hint):
        flops = min(flops, int(hint()))
    return {"flops": flops, "bytes": int(nbytes)}


def sol_ms(flops: float, nbytes: float, spec: DeviceSpec, precision: str = "fp32") -> tuple[float, str]:
    """(speed-of-light time in ms, 'compute' or 'memory')."""
    rate = (spec.fp32_tflops if precision == "fp32" else spec.bf16_tflops) * 1e12
    t_compute = flops / rate
    t_memory = nbytes / (spec.bandwidth_tbs * 1e12)
    return max(t_compute, t_memory) * 1e3, ("compute" if t_compute >= t_memory else "memory")


def problem_sol_ms(problem: Problem, device_name: str, precision: str = "fp32", small: bool = False) -> float | None:
    return config_sol_ms(problem, problem.declared_configs(small=small)[0].overrides, device_name, precision)


def config_sol_ms(problem: Problem, overrides: dict | None, device_name: str, precision: str = "fp32") -> float | None:
    """The speed-of-light time of one configuration (the default's, or a variant's overrides)."""
    if spec_for(device_name) is None:
        return None
    return bound_ms(count_at(problem, overrides, precision), device_name, precision)


def count_at(problem: Problem, overrides: dict | None, precision: str = "fp32") -> dict:
    """:func:`count` of one configuration in ``precision`` (bytes of 2-byte elements off fp32)."""
    return count(problem, overrides, 2 if precision != "fp32" else None)


def bound_ms(c: dict, device_name: str, precision: str = "fp32") -> float | None:
    """The speed-of-light time of a count (:func:`count_at`) on the device called ``device_name``,
    None for a device without a spec."""
    spec = spec_for(device_name)
    return None if spec is None else sol_ms(c["flops"], c["bytes"], spec, precision)[0]


def index_rows(root: str | Path) -> list[dict]:
    problems, errors = discover_with_errors(root)
    rows = []
    for p in problems:
        row = {
            "level": p.level, "number": p.number, "name": p.name, "problem": p.key, "task": p.task,
            "tags": " ".join(p.tags), "n_variants": len(p.variants), "n_small_variants": len(p.small_variants),
        }
        try:
            c = count(p)
            row.update(flops=c["flops"], bytes=c["bytes"])
            h100 = DEVICES["h100-sxm"]
            row["sol_ms_h100"], row["bound_h100"] = sol_ms(c["flops"], c["bytes"], h100)
            row["error"] = None
        except Exception as e:  # noqa: BLE001 - a problem that cannot run on meta is listed with why
            row.update(flops=None, bytes=None, sol_ms_h100=None, bound_h100=None, error=f"{type(e).__name__}: {str(e)[:200]}")
        rows.append(row)
    for path, err in errors:
        rows.append({"problem": str(path), "error": str(err)})
    return rows


def write_index(root: str | Path, out: str | Path):
    import pandas as pd

    df = pd.DataFrame(index_rows(root))
    df.to_csv(out, index=False)
    return df
