"""One configuration of a problem checked: loads, runs, finite, deterministic, not degenerate,
sensibly sized (:func:`check_config`); the problem as a whole, with its derived variants, is
:mod:`kbench_lib.suite.lint`. Split from it so that :mod:`kbench_lib.suite.variants` validates derived
variants through these checks without importing the module that imports it.

Validating problem files: loads, runs, finite, deterministic, not degenerate, sensibly sized.

Degenerate means that a cheap guess passes the fp32 tolerance (an all-zero output, the output's
mean broadcast to its shape) or that the output ignores its inputs or parameters (threat #6). The
same numerical rules flag degenerate tasks at judging time (:func:`degenerate_reasons`), so
upstream KernelBench folders can be run unchanged and warned about.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from .problems import Config, Problem, ProblemError, instantiate
from .reference import set_flags
from ..measure.tensors import TOLERANCE, as_output_list, require_grad, to_device

FP32_TOL = TOLERANCE["fp32"]
MIN_GPU_MS = 0.1
MAX_GPU_BYTES = 16 << 30
MAX_SMALL_MS = 1000.0  # SMALL: "reference forward well under a second on one core"


@dataclass
class LintIssue:
    problem: str
    config: str
    check: str
    reason: str


@dataclass
class LintReport:
    problem: str
    ok: bool = True
    issues: list = field(default_factory=list)
    configs: list = field(default_factory=list)  # per configuration: timings, memory
    lowp_ok: dict = field(default_factory=dict)  # precision -> agrees with fp32 within its tolerance
    derived: list = field(default_factory=list)  # derived variants: {"config", "overrides"} (kbench_lib.suite.variants)
    notes: list = field(default_factory=list)  # what does not fail the problem: derived variants dropped, opt-outs

    def fail(self, config: str, check: str, reason: str) -> None:
        self.ok = False
        self.issues.append(LintIssue(self.problem, config, check, reason))


def _close(a: torch.Tensor, b: torch.Tensor, tol: float) -> bool:
    if a.shape != b.shape:
        return False
    if not a.is_floating_point():
        return bool(torch.equal(a, b))
    return bool(torch.allclose(a.double(), b.double(), atol=tol, rtol=tol, equal_nan=True))


def degenerate_reasons(expected: list, other_seed: list | None = None, tol: float = FP32_TOL) -> list[str]:
    """Why a task's reference outputs can be matched without computing them (empty if none)."""
    reasons = []
    for i, out in enumerate(expected):
        if not isinstance(out, torch.Tensor) or not out.is_floating_point() or out.numel() == 0:
            continue
        name = "output" if len(expected) == 1 else f"output {i}"
        if _close(torch.zeros_like(out), out, tol):
            reasons.append(f"an all-zero {name} passes the tolerance")
        elif out.numel() > 1 and _close(out.double().mean().expand(out.shape).to(out.dtype), out, tol):
            reasons.append(f"the {name}'s mean broadcast to its shape passes the tolerance")
    if other_seed is not None and len(other_seed) == len(expected):
        if all(isinstance(a, torch.Tensor) and _close(a, b, tol) for a, b in zip(expected, other_seed)):
            reasons.append("the output does not change when the inputs change")
    return reasons


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _run(model, inputs, backward: bool, grad_seed: int = 0):
    if not backward:
        with torch.no_grad():
            return [o.detach() if isinstance(o, torch.Tensor) else o for o in as_output_list(model(*inputs))], None
    leaves = require_grad(inputs)
    model.zero_grad(set_to_none=True)
    outs = as_output_list(model(*inputs))
    gen = torch.Generator().manual_seed(grad_seed)
    grads = [torch.randn(o.shape, generator=gen).to(o.device, o.dtype) for o in outs]
    torch.autograd.backward(outs, grads)
    g = [t.grad.detach().clone() if t.grad is not None else None for t in leaves]
    g += [p.grad.detach().clone() if p.grad is not None else None for p in model.parameters()]
    for t in leaves:
        t.grad = None
    return [o.detach() for o in outs], g


def _build(problem: Problem, cfg: Config, device: str, init_seed: int, input_seed: int, dtype=torch.float32):
    ns = instantiate(problem, cfg.overrides)
    torch.manual_seed(init_seed)
    init_inputs = list(ns["get_init_inputs"]())
    torch.manual_seed(init_seed)
    model = ns["Model"](*init_inputs).to(device)
    torch.manual_seed(input_seed)
    inputs = to_device(list(ns["get_inputs"]()), device)
    if dtype != torch.float32:
        model = model.to(dtype)
        inputs = [t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
    return ns, model, inputs


def lint_config(problem: Problem, cfg: Config, device: str, report: LintReport, check_size: bool) -> None:
    backward = problem.task == "backward"
    name = cfg.name
    set_flags()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    _, model, inputs = _build(problem, cfg, device, 11, 12)
    keep = [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in inputs]
    _sync(device)
    t0 = time.perf_counter()
    out, grads = _run(model, inputs, backward)
    _sync(device)
    first_ms = (time.perf_counter() - t0) * 1e3
    info = {"config": name, "first_ms": first_ms}
    for i, o in enumerate(out):
        if not isinstance(o, torch.Tensor):
            report.fail(name, "output_type", f"output {i} is a {type(o).__name__}, not a tensor")
            return
        if o.is_floating_point() and not bool(torch.isfinite(o).all()):
            report.fail(name, "finite", f"output {i} has non-finite values")
            return
    if grads is not None:
        for j, g in enumerate(grads):
            if g is None:
                report.fail(name, "gradient", f"gradient {j} (inputs first, then parameters) is missing: an unused input or parameter")
            elif not bool(torch.isfinite(g).all()):
                report.fail(name, "gradient", f"gradient {j} has non-finite values")
            elif _close(torch.zeros_like(g), g, FP32_TOL):
                report.fail(name, "gradient", f"gradient {j} is ~0: an all-zero gradient passes the tolerance")
    # determinism: same model, same inputs, again
    inputs2 = [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in keep]
    _sync(device)
    t0 = time.perf_counter()
    out2, _ = _run(model, inputs2, backward)
    _sync(device)
    info["second_ms"] = (time.perf_counter() - t0) * 1e3
    if not all(_close(a, b, FP32_TOL / 10) for a, b in zip(out, out2)):
        report.fail(name, "deterministic", "two runs on the same inputs disagree (random ops, dropout, or state in forward)")
    # degenerate: constant guesses, and input sensitivity
    _, _, other = _build(problem, cfg, device, 11, 99)
    out_other, _ = _run(model, other, backward)
    for reason in degenerate_reasons(out, out_other):
        report.fail(name, "degenerate", reason)
    # parameter sensitivity
    params = [p for p in model.parameters() if p.is_floating_point()]
    if params:
        gen = torch.Generator().manual_seed(5)
        with torch.no_grad():
            for p in params:
                noise = torch.randn(p.shape, generator=gen).to(p.device, p.dtype)
                p.add_(0.1 * noise * (p.abs().mean() + 0.01))
        out_p, _ = _run(model, [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in keep], backward)
        if all(_close(a, b, FP32_TOL) for a, b in zip(out, out_p)):
            report.fail(name, "degenerate", "the output does not change when the parameters change")
    # conditioning: the fp32 reference must agree with an fp64 run well inside the fp32 tolerance,
    # or a correct kernel that merely sums in another order fails (e.g. long cumulative sums)
    if not backward:
        worst = _fp64_violation(problem, cfg, device, out)
        info["fp64_violation"] = worst
        if worst > 0.5:
            report.fail(name, "conditioning", f"the fp32 reference differs from fp64 by {worst:.2f}x the fp32 tolerance: "
                        "correct kernels that sum in another order would fail")
    if device.startswith("cuda"):
        info["peak_bytes"] = int(torch.cuda.max_memory_allocated())
        if check_size and info["peak_bytes"] > MAX_GPU_BYTES:
            report.fail(name, "size", f"peak GPU memory {info['peak_bytes'] / 2**30:.1f} GiB exceeds 16 GiB")
        if check_size and name == "default":
            info["eager_ms"] = _eager_ms(model, keep, backward)
            if info["eager_ms"] < MIN_GPU_MS:
                report.fail(name, "size", f"eager forward takes {info['eager_ms'] * 1e3:.1f} us, under the {MIN_GPU_MS * 1e3:.0f} us floor")
    elif name.startswith("small") and min(first_ms, info["second_ms"]) > MAX_SMALL_MS:
        report.fail(name, "size", f"SMALL forward takes {info['second_ms']:.0f} ms on the CPU (limit {MAX_SMALL_MS:.0f} ms)")
    report.configs.append(info)


def _fp64_violation(problem: Problem, cfg: Config, device: str, out32: list) -> float:
    """max over elements of |out32 - out64| / (atol + rtol |out64|) for the fp32 tolerance."""
    _, model, inputs = _build(problem, cfg, device, 11, 12, torch.float64)
    out64, _ = _run(model, inputs, False)
    worst = 0.0
    for a, b in zip(out32, out64):
        if isinstance(a, torch.Tensor) and a.is_floating_point() and a.shape == b.shape and a.numel():
            ratio = (a.double() - b).abs() / (FP32_TOL + FP32_TOL * b.abs())
            worst = max(worst, float(ratio.nan_to_num(0.0).max()))
    return worst


def _eager_ms(model, inputs, backward: bool) -> float:
    from ..measure.timing import time_cuda

    sets = [[t.detach().clone() if isinstance(t, torch.Tensor) else t for t in inputs]]
    return time_cuda(lambda *x: _run(model, list(x), backward)[0], sets, min_trials=20, max_trials=50, budget_s=2.0, warmup_ms=10).median_ms


def lowp_agreement(problem: Problem, cfg: Config, device: str) -> dict:
    """Whether the reference run in bf16/fp16 agrees with the fp32 one within that dtype's tolerance."""
    _, model, inputs = _build(problem, cfg, device, 11, 12)
    ref, _ = _run(model, inputs, False)
    result = {}
    for prec, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        try:
            _, m, x = _build(problem, cfg, device, 11, 12, dtype)
            out, _ = _run(m, x, False)
            tol = TOLERANCE[prec]
            result[prec] = all(
                _close(o.float() if o.is_floating_point() else o, r, tol) for o, r in zip(out, ref)
            )
        except Exception:  # noqa: BLE001 - an op without a low-precision kernel is simply "not ok"
            result[prec] = False
    return result


def check_config(problem: Problem, cfg: Config, device: str, report: LintReport, check_size: bool = True) -> None:
    """:func:`lint_config`, with every fault of the problem turned into a reported reason."""
    try:
        lint_config(problem, cfg, device, report, check_size)
    except ProblemError as e:
        report.fail(cfg.name, "loads", str(e))
    except torch.cuda.OutOfMemoryError as e:
        report.fail(cfg.name, "size", f"out of memory: {str(e)[:200]}")
    except Exception as e:  # noqa: BLE001 - every problem fault becomes a reported reason
        report.fail(cfg.name, "runs", f"{type(e).__name__}: {str(e)[:300]}")
    finally:
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
