"""Reading the worker's reports: its messages (the last and first of a kind, forged ones), how its
process ended (a death, a limit, ended early), the run's time limit, and the plain values a report
may hold (strings, JSON, counts, finite reals).
"""
from __future__ import annotations

import json
import math

from ..isolation import sandbox
from ..isolation.idle import IDLE_CPU_S
from .prepared import PreparedProblem
from .verdict import JudgeOptions, Verdict, _fail


def _last(messages: list, event: str):
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("event") == event:
            return m
    return None


def _first(messages: list, event: str):
    for m in messages:
        if isinstance(m, dict) and m.get("event") == event:
            return m
    return None


# reports the worker sends once per run (per configuration where keyed): a second one was written on
# the channel by the candidate (it shares the process and can find the pipe), and no count of them
# can be trusted
ONCE = {"inputs": None, "timing": None, "profile": None, "done": None, "failure": None, "stopped": None,
        "timed_inputs": "config", "variant_timing": "config", "case_done": "case", "case_failed": "case"}


def _forged_reports(messages: list) -> str | None:
    """Why the worker's messages hold a report twice (written by the candidate), or None."""
    seen: dict = {}
    for m in messages:
        if not isinstance(m, dict) or m.get("event") not in ONCE:
            continue
        key = ONCE[m["event"]]
        which = json.dumps(m.get(key), sort_keys=True, default=str) if key else ""
        seen[(m["event"], which)] = seen.get((m["event"], which), 0) + 1
        if seen[(m["event"], which)] > 1:
            what = m["event"] + (f" ({key} {which})" if key else "")
            return f"the worker's channel carried a second {what} report: messages were written by the candidate"
    return None


def _death(res: sandbox.ProcessResult, stage_default: str, limit_s: float) -> tuple[str, str]:
    """(category, message) of a worker that ended without a verdict of its own: timeout or crash."""
    stage = _last(res.messages, "stage")
    where = f"during {stage_default}"
    if stage:
        where = f"during {stage.get('stage')}" + (f" (case {stage['case']})" if "case" in stage else "")
        where += f" of {stage.get('config')}" if stage.get("stage") == "variant_timing" else ""
    if res.timed_out and res.idle_s is not None:
        return "timeout", (f"candidate sat idle {where}: its processes used under {IDLE_CPU_S:g} s of CPU time in "
                           f"{res.idle_s:.1f} s (sleeping or blocked), past the idle limit")
    if res.timed_out:
        return "timeout", f"candidate exceeded the {limit_s:g} s limit {where}"
    how = f"killed by {res.signal_name}" if res.signal_name else f"exited with status {res.returncode}"
    return "crash", f"candidate process {how} {where} without reporting a result"


def _died(v: Verdict, res: sandbox.ProcessResult, stage_default: str, limit_s: float) -> Verdict:
    """A worker that ended without a verdict of its own: timeout or crash."""
    failure, message = _death(res, stage_default, limit_s)
    return _fail(v, failure, message, res.log)


def _ended_early(res: sandbox.ProcessResult) -> bool:
    """Whether the worker ended without its ``done`` report (killed, timed out, exited non-zero)."""
    return bool(res.timed_out or res.returncode != 0 or not _last(res.messages, "done"))


def _died_checking(res: sandbox.ProcessResult) -> bool:
    """Whether a worker that ended without finishing was checking a set when it died (that set's
    configuration fails; the checks before it stand)."""
    stage = _last(res.messages, "stage")
    return bool(stage) and stage.get("stage") == "correctness" and isinstance(stage.get("case"), int)


VARIANT_TIMING_ALLOWANCE_S = 15.0  # per timed variant beyond its timing budget: its warm-up and sampled outputs


def run_limit_s(prep: PreparedProblem, opts: JudgeOptions) -> float:
    """The run's time limit: ``run_timeout_s``, plus, with ``time_variants``, each timed variant's
    timing budget for every run it may take (re-measurements included) and an allowance, so that an honest candidate on a problem with many variants is
    not cut off while its variants are timed."""
    if not opts.timing:
        return opts.run_timeout_s
    from ..measure.trials import MAX_REMEASURE  # a drifting run is measured again, each time within the budget

    per_variant = (1 + MAX_REMEASURE) * opts.timing_budget_s + VARIANT_TIMING_ALLOWANCE_S
    return opts.run_timeout_s + len(prep.timed_variants) * per_variant


def _strings(items) -> list[str]:
    """Flags from a worker's message: strings only (bounded), whatever the message held."""
    return [str(f)[:2000] for f in items[:100]] if isinstance(items, list) else []


def _plain_json(obj):
    return json.loads(json.dumps(obj, default=str))


INT32_MAX = (1 << 31) - 1  # counts go to int32 columns of the records (records.SCHEMA)


def _count(x) -> int | None:
    """A non-negative count from a candidate's message, clamped to int32; None if not an int."""
    if isinstance(x, bool) or not isinstance(x, int) or x < 0:
        return None
    return min(x, INT32_MAX)


def _real(x, lo: float = 0.0, hi: float = math.inf) -> float | None:
    """A finite number in [lo, hi] from a candidate's message; None otherwise."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) and lo <= x <= hi else None
