"""The verdict's stage times: where a judgement's wall time went (the worker's start and its parts,
each stage's laps).
"""
from __future__ import annotations

import time

from ..isolation import sandbox
from .verdict import Verdict
from .worker_reports import _real


_START_PARTS = ("context", "draw", "imports", "threads", "arena")


def _stage_times(v: Verdict, since: float, res: sandbox.ProcessResult, ended: float) -> None:
    """Seconds per worker stage, from the arrival times of its stage messages; the worker's own
    split of its start (``run_start.context`` and so on, parts of ``run_start``: what it reported
    before any candidate code ran, numbers only)."""
    stages = [m for m in res.messages if isinstance(m, dict) and m.get("event") == "stage" and "_t" in m]
    prev_name, prev_t = "start", since
    for m in stages:
        name, t = m.get("stage"), m["_t"]
        key = f"run_{prev_name}"
        v.stage_s[key] = round(v.stage_s.get(key, 0.0) + t - prev_t, 3)
        if prev_name == "start":
            _stage_parts(v, "run_start", m.get("parts"), _START_PARTS)
        prev_name, prev_t = name, t
    key = f"run_{prev_name}"
    v.stage_s[key] = round(v.stage_s.get(key, 0.0) + ended - prev_t, 3)


def _queued(res: sandbox.ProcessResult, gate_opened: float | None) -> float | None:
    """Seconds the worker waited at its gate for the GPU (the previous candidate's profile and timed
    calls), from its ``gate`` message to the judge's opening of the gate, both on the judge's clock;
    None where it never waited there. The judge's own record of a judgement's time leaves it out
    (``judge_s``; ``queue_s`` apart)."""
    at = [m["_t"] for m in res.messages if isinstance(m, dict) and m.get("event") == "stage" and m.get("stage") == "gate" and "_t" in m]
    if not at or gate_opened is None:
        return None
    return round(max(0.0, gate_opened - at[0]), 3)


def _stage_parts(v: Verdict, stage: str, parts, names: tuple) -> None:
    """The worker's report of a stage's parts into ``stage_s`` as ``stage.part``: known names with
    finite seconds only (the report is the worker's, after the candidate's import possibly forged)."""
    if not isinstance(parts, dict):
        return
    for name in names:
        secs = _real(parts.get(name), 0.0, 1e6)
        if secs is not None:
            v.stage_s[f"{stage}.{name}"] = round(secs, 3)


class _Laps:
    def __init__(self, v: Verdict):
        self.v, self.mark = v, time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.v.stage_s[name] = round(self.v.stage_s.get(name, 0.0) + now - self.mark, 3)
        self.mark = now
