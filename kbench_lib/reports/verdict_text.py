"""A verdict in words, as ``kbench eval`` prints it: honest about where its times come from (a
speedup only for a kernel a GPU timed) and about what correctness covered (input sets, shape
variants, each configuration under the verdict's protocol)."""
from __future__ import annotations

import textwrap

from ..scoring.flags import flag_class
from ..scoring.metrics import TIMING_KINDS
from ..scoring.protocols import ENVELOPES, config_state, scoped


def checks_line(verdict, problem) -> str:
    """What correctness covered, in words: input sets of the default configuration, shape variants."""
    size = "SMALL" if verdict.small else "full-size"
    planned = len(problem.small_variants if verdict.small else problem.variants)
    line = f"  checked {verdict.seeds_checked} input sets of the {size} configuration"
    derived = len(verdict.variants_derived)
    if planned and not derived:
        line += f" and {verdict.variants_checked} of its {planned} shape variants"
    elif derived:
        line += f" and {verdict.variants_checked} shape variants ({planned} declared, {derived} derived from its size constants)"
    elif verdict.small and problem.variants:
        line += f"; its {len(problem.variants)} shape variants are full-size only (no SMALL_VARIANTS), checked with --full"
    else:
        line += "; the problem defines no shape variants"
    err = "-" if verdict.max_abs_err is None else f"{verdict.max_abs_err:.3g}"
    return f"{line}; max abs err {err}"


def verdict_lines(verdict, problem, candidate, kind: str) -> list[str]:
    """``verdict`` of ``candidate`` on ``problem`` in lines of text: status, message, flags with their
    classes, times (a speedup only where ``kind``, :func:`kbench_lib.scoring.metrics.timing_kind`,
    says a GPU timed a kernel), what correctness covered or why it failed, the configurations."""
    status = "CORRECT" if verdict.correct else f"FAILED ({verdict.failure})"
    lines = [f"{problem.key}  [{candidate.backend} on {verdict.device_name}, {verdict.precision}]  {status}"]
    if verdict.message:
        lines.append(textwrap.indent(verdict.message.strip()[:2000], "  "))
    lines += [f"  FLAG [{flag_class(f)}] {f}" for f in verdict.flags]
    if verdict.runtime_ms is not None and kind == "gpu":
        lines.append(f"  runtime {verdict.runtime_ms:.4f} ms   eager {verdict.baseline_ms:.4f} ms   speedup {verdict.speedup:.3g}x")
        if verdict.speedup_compile is not None:
            lines.append(f"  torch.compile {verdict.baseline_compile_ms:.4f} ms   speedup {verdict.speedup_compile:.3g}x")
    elif verdict.runtime_ms is not None:
        lines.append(f"  runtime {verdict.runtime_ms:.4f} ms   eager {verdict.baseline_ms:.4f} ms   "
                     f"timed by {TIMING_KINDS[kind]}: no kernel speedup")
    lines += variant_timing_lines(verdict, kind)
    if verdict.correct:
        lines.append(checks_line(verdict, problem))
    elif verdict.cause and verdict.cause != verdict.failure:
        lines.append(f"  cause: {verdict.cause}")
    lines += config_lines(verdict)
    return lines


def config_lines(verdict) -> list[str]:
    """One line per configuration checked (or not), under the verdict's protocol."""
    if not verdict.configs:
        return []
    deciding = {c.get("config") for c in scoped(verdict.protocol, verdict.configs)}
    lines = [f"  configurations (protocol {verdict.protocol}; * decides correct):"]
    for c in verdict.configs:
        mark = "*" if c["config"] in deciding else " "
        state = f"follows {c['follows']}" if c.get("follows") else config_state(c)
        need = "" if c["tol_needed"] is None else f"  tol_needed {c['tol_needed']:.3g}"
        err = "" if c["max_abs_err"] is None else f"  max abs err {c['max_abs_err']:.3g}"
        ref = "".join(f"  reference in {name} {c[field]:.3g}" for field, name in ENVELOPES if c.get(field) is not None)
        why = f"  ({c['reason']})" if not c["checked"] and c.get("reason") else ""
        note = f"  [{c['note']}]" if c.get("note") else ""
        lines.append(f"   {mark} {c['config']:<24} {c['kind']:<8} {state}{need}{err}{ref}{why}{note}")
    return lines


def variant_timing_lines(verdict, kind: str) -> list[str]:
    """--time-variants: one line per timed variant (a speedup only where the times are a kernel's)."""
    return [f"    on {name}: runtime {t['runtime_ms']:.4f} ms   eager {t['baseline_ms']:.4f} ms"
            + (f"   speedup {t['speedup']:.3g}x" if kind == "gpu" else "") for name, t in verdict.variant_timings.items()]
