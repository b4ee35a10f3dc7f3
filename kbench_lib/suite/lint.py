"""Validating problem files: loads, runs, finite, deterministic, not degenerate, sensibly sized.

Degenerate means that a cheap guess passes the fp32 tolerance (an all-zero output, the output's
mean broadcast to its shape) or that the output ignores its inputs or parameters (threat #6). The
same numerical rules flag degenerate tasks at judging time (:func:`.problem_checks.degenerate_reasons`), so
upstream KernelBench folders can be run unchanged and warned about.
"""
from __future__ import annotations

from dataclasses import asdict

from .problem_checks import LintReport, check_config, lowp_agreement
from .problems import Problem


def lint_problem(problem: Problem, device: str = "cpu", small: bool = True, require_extensions: bool = True, check_size: bool = True, lowp: bool = True) -> LintReport:
    report = LintReport(problem.key)
    if require_extensions:
        if not problem.tags:
            report.fail("-", "metadata", "no TAGS")
        if len(problem.variants) < 2:
            report.fail("-", "metadata", f"{len(problem.variants)} VARIANTS (at least 2 are required)")
        if not problem.small:
            report.fail("-", "metadata", "no SMALL configuration")
    for cfg in problem.declared_configs(small=small):
        check_config(problem, cfg, device, report, check_size)
    lint_derived(problem, device, small, report)
    if lowp and problem.task == "forward" and report.ok:
        try:
            report.lowp_ok = lowp_agreement(problem, problem.declared_configs(small=small)[0], device)
        except Exception:  # noqa: BLE001
            report.lowp_ok = {"bf16": False, "fp16": False}
    return report


def lint_derived(problem: Problem, device: str, small: bool, report: LintReport) -> None:
    """Derive (and validate, through :func:`check_config`) the variants of a problem that declares
    fewer than two for this size; the problem fails when it is still left with fewer than two."""
    from .variants import N_DERIVED, derive, needs_derivation

    declared = len(problem.declared_configs(small)) - 1
    if not needs_derivation(problem, small):
        if declared < N_DERIVED:
            report.notes.append(f"{declared} variants declared and DERIVE_VARIANTS = False: judged on fewer than two other shapes")
        return
    d = derive(problem, small, device, fresh=True)
    report.derived = [{"config": c.name, "overrides": c.overrides} for c in d.configs]
    report.configs.extend(d.infos)
    report.notes.extend(d.notes)
    if declared + len(d.configs) < N_DERIVED:
        report.fail("-", "variants", f"{declared} declared and {len(d.configs)} derived variants (at least {N_DERIVED} are needed): "
                    + " | ".join(d.notes)[-1500:])


def summarize(reports: list[LintReport]) -> dict:
    failures = [asdict(i) for r in reports for i in r.issues]
    return {
        "total": len(reports),
        "failed": sum(1 for r in reports if not r.ok),
        "failures": failures,
        "lowp_ok": {p: sorted(r.problem for r in reports if r.lowp_ok.get(p)) for p in ("bf16", "fp16")},
        "derived": {r.problem: r.derived for r in reports if r.derived},
        "notes": {r.problem: r.notes for r in reports if r.notes},
        "problems": [{"problem": r.problem, "ok": r.ok, "configs": r.configs, "lowp_ok": r.lowp_ok, "derived": r.derived,
                      "notes": r.notes} for r in reports],
    }
