"""Correctness per configuration: every checked input set of a judgement compared with the
reference, whatever the tolerance, and gathered into one result per configuration
(:mod:`kbench_lib.scoring.protocols` says what the fields mean and which of them decide ``correct``).

The worker checks every configuration, also after one failed: a set that raises ends its
configuration (its other sets are skipped: one failure settles it) and the worker goes on with the
next; a failure that poisons its process (an illegal address leaves the CUDA context unusable)
stops it, and the configurations it did not reach are recorded as not checked, with the reason.
What each set returned is compared here, in the judge's process, on the judge's device.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..measure.compare import measure_outputs, unchanged
from ..suite.problems import Config, eval_config, mode_of


@dataclass
class SetResult:
    """One checked input set: ``hard`` a failure no tolerance removes (with ``message``), else
    ``tol_needed`` and ``max_abs_err`` over its outputs and gradients, and ``over`` what is
    outside ``tol`` (a message naming the set) when something is."""

    hard: str | None = None
    message: str | None = None
    tol_needed: float | None = None
    max_abs_err: float | None = None
    over: str | None = None


def check_set(case, got: dict, tol: float, backward: bool, dev: str | None = None) -> SetResult:
    """Compares one set's returned record (outputs, inputs after the call, gradients) with the
    reference's ``case``; ``tol`` only words the message of a set whose error is over it."""
    where = f"[{case.config}, seed {case.input_seed}]"
    parts = [("outputs", measure_outputs(case.expected, got.get("outputs"), device=dev))]
    if parts[0][1].hard is not None:
        m = parts[0][1]
        return SetResult(m.hard.failure, f"{where} {m.hard.message}", max_abs_err=m.max_abs_err)
    changed = unchanged(case.inputs, got.get("inputs_after", []), dev)
    if changed:
        return SetResult("input_mutated", f"[{case.config}] {changed}", max_abs_err=parts[0][1].max_abs_err)
    if backward:
        grads, missing = _gradients(case, got, dev)
        if missing:
            return SetResult("output_mismatch", f"[{case.config}] {missing}", max_abs_err=parts[0][1].max_abs_err)
        parts += grads
    worst = max((m.max_abs_err for _, m in parts if m.max_abs_err is not None), default=0.0)
    for _, m in parts:
        if m.hard is not None:
            return SetResult(m.hard.failure, f"{where} {m.hard.message}", max_abs_err=worst)
    need = max(m.tol_needed for _, m in parts)
    over = next((f"{where} {mm.message}" for _, m in parts for mm in [m.mismatch(tol)] if mm is not None), None)
    return SetResult(None, None, need, worst, over)


def _gradients(case, got: dict, dev: str | None) -> tuple[list, str | None]:
    """(name, measure) of every expected gradient, or what is missing."""
    out = []
    got_in = got.get("input_grads") or []
    for j, e in enumerate(case.expected_input_grads):
        if e is None:
            continue
        g = got_in[j] if j < len(got_in) else None
        if g is None:
            return [], f"no gradient for input {j}"
        out.append((f"grad of input {j}", measure_outputs([e], [g], what=f"grad of input {j}", device=dev)))
    got_p = got.get("param_grads") or {}
    if case.expected_param_grads and set(got_p) != set(case.expected_param_grads):
        return [], "parameter gradients are not comparable: ModelNew's parameter names differ from the reference's"
    for name, e in case.expected_param_grads.items():
        out.append((f"grad of {name}", measure_outputs([e], [got_p[name]], what=f"grad of {name}", device=dev)))
    return out, None


def new_config(name: str, kind: str) -> dict:
    return {"config": name, "kind": kind, "mode": mode_of(name), "checked": False, "passed": False, "failure": None,
            "hard_failure": None, "message": None, "reason": None, "tol_needed": None, "max_abs_err": None, "ref_tf32_tol": None,
            "ref_fp16_tol": None, "ref_bf16_tol": None, "sets": 0, "follows": None, "note": None}


def kinds(prep) -> dict[str, str]:
    """Each configuration's kind, by name: the default, declared variants, derived variants, and
    the default's eval configuration (``eval``), which is named for the default last."""
    names = list(dict.fromkeys(s.config.name for s in prep.specs))
    derived = set(prep.variants_derived)
    out = {n: "eval" if mode_of(n) == "eval" else "default" if i == 0 else "derived" if n in derived else "declared"
           for i, n in enumerate(names)}
    default = names[0]
    evald = eval_config(Config(default)).name
    out.pop(evald, None)
    out[evald] = "eval"  # always an entry: checked, or following the default (kbench_lib.judging.modes)
    return out


def add_set(config: dict, r: SetResult, count: bool = True) -> None:
    """Folds one set's result into its configuration's (``count``: a set of its own, not a
    re-check of timed outputs)."""
    config["checked"] = True
    config["sets"] += int(count)
    if r.max_abs_err is not None:
        config["max_abs_err"] = max(config["max_abs_err"] or 0.0, r.max_abs_err)
    if r.hard is not None:
        if config["hard_failure"] is None:
            config["hard_failure"], config["message"] = r.hard, r.message
        config["tol_needed"] = None
        return
    if config["hard_failure"] is None:
        config["tol_needed"] = r.tol_needed if config["tol_needed"] is None else max(config["tol_needed"], r.tol_needed)
        if r.over and config["message"] is None:
            config["message"] = r.over


def fail_config(config: dict, failure: str, message: str) -> None:
    """A set of ``config`` that raised, or whose process died: the configuration fails with it."""
    if not config["checked"]:
        config["sets"] += 1
    config["checked"] = True
    if config["hard_failure"] is None:
        config["hard_failure"], config["message"] = failure, message
    config["tol_needed"] = None


def unchecked(config: dict, reason: str) -> None:
    if not config["checked"]:
        config["reason"] = reason


def settle(configs: list[dict], tol: float) -> None:
    """Each configuration's ``passed`` and ``failure`` at ``tol`` (the verdict's protocol's)."""
    from ..scoring.protocols import config_failure

    for c in configs:
        c["failure"] = config_failure(c, tol)
        c["passed"] = c["failure"] is None
        if c["passed"]:
            c["message"] = None


__all__ = ["SetResult", "add_set", "check_set", "fail_config", "kinds", "new_config", "settle", "unchecked"]


def gather(prep, messages: list, read, tol: float, dev: str | None, died: tuple[str, str] | None) -> list[dict]:
    """Every configuration's result from one worker's run: its ``case_failed`` and ``case_done``
    reports and the records it wrote, read with ``read(case index) -> record`` (which raises
    :class:`ResultError` for a missing or forged one). ``died``: how the process ended while it was
    checking the set of its last ``stage`` report, as (category, message) (None: it finished); that
    configuration fails with it. Configurations it never reached are not checked, with the reason."""
    kind = kinds(prep)
    configs = {n: new_config(n, k) for n, k in kind.items()}
    done, failed, stopped, last_case = set(), {}, None, None
    notes: dict[int, str] = {}
    for m in messages:
        if not isinstance(m, dict):
            continue
        ev = m.get("event")
        if ev in ("case_done", "case_failed") and isinstance(m.get("case"), int) and isinstance(m.get("note"), str):
            notes[m["case"]] = m["note"][:300]  # what the candidate did with ``training`` (the worker's mode check)
        if ev == "case_done" and isinstance(m.get("case"), int):
            done.add(m["case"])
        elif ev == "case_failed" and isinstance(m.get("case"), int):
            failed[m["case"]] = m
        elif ev == "stopped":
            stopped = str(m.get("reason") or "the checks stopped")[:500]
        elif ev == "stage" and m.get("stage") == "correctness" and isinstance(m.get("case"), int):
            last_case = m["case"]
    backward = prep.problem.task == "backward"
    reason = None
    for i, (spec, case) in enumerate(zip(prep.specs, prep.cases)):
        if spec.timed:
            continue
        c = configs[spec.config.name]
        if i in notes and c["note"] is None:
            c["note"] = notes[i]
        if i in failed:
            f = failed[i]
            category = f.get("failure") if f.get("failure") in SET_FAILURES else "crash"
            fail_config(c, category, str(f.get("message", ""))[-4000:])
        elif i in done:
            try:
                got = read(i)
            except ResultError as e:
                fail_config(c, "crash", f"[{c['config']}] no readable result for case {i}: {e}")
                continue
            add_set(c, check_set(case, got, tol, backward, dev))
            del got
        elif died is not None and i == last_case:
            fail_config(c, died[0], f"[{c['config']}] {died[1]}")
            reason = f"the candidate's process died while checking {c['config']}"
        elif c["hard_failure"] is None and reason is None and stopped is None and died is None:
            fail_config(c, "crash", f"[{c['config']}] the worker reported no result for case {i}")
        else:
            unchecked(c, reason or stopped or "not reached")
    follow_default(configs, prep)
    return list(configs.values())


def follow_default(configs: dict, prep) -> None:
    """The eval configuration's entry where the plan did not check it: it follows the default
    configuration, with the reason (:mod:`kbench_lib.judging.modes`)."""
    from .modes import ModeProbe, NOT_PLANNED

    entry = next((c for c in configs.values() if c["kind"] == "eval"), None)
    if entry is None or any(s.config.name == entry["config"] and not s.timed for s in prep.specs):
        return
    found = getattr(prep, "modes", None) or ModeProbe(False, None, NOT_PLANNED)
    default = next(c for c in configs.values() if c["kind"] == "default")
    entry.update(checked=False, follows=default["config"], reason=found.reason)


class ResultError(Exception):
    """A set's record that cannot be read (missing, forged, not a record)."""


# the categories a worker may report for one set (anything else it reports is read as a crash)
SET_FAILURES = ("load_error", "output_mismatch", "shape_mismatch", "dtype_mismatch", "nonfinite", "input_mutated",
                "runtime_error", "oom", "timeout", "crash")
