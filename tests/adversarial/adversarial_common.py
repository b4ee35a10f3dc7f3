"""What the CPU and GPU adversarial suites share: the cheat description, how a verdict is summarised
and reported, and what counts as caught (see test_adversarial_cpu.py's docstring)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MISMATCH = ("failure:output_mismatch", "failure:nonfinite")
BRIEF_KEYS = ("correct", "failure", "flags", "message", "runtime_ms", "baseline_ms", "speedup", "sol_ms", "max_abs_err",
              "n_kernels", "custom_kernel_share", "seeds_checked", "variants_checked", "judge_s", "stage_s")

TIMING_KEYS = ("n_trials", "unjoined_trials", "unjoined_recheck", "recheck_calls", "first_round_ms", "device_ms", "device_union_ms", "stream_ms",
               "head_start_us", "late_issues", "remeasured", "first_round_fastest_ms", "first_round_excused")


@dataclass(frozen=True)
class Cheat:
    file: str
    problem: str
    any_of: tuple = ()
    all_of: tuple = ()
    tamper: bool = False  # patches the harness inside the candidate's process
    forges_time: bool = False  # its only gain is a faked time: an honest measurement defeats it

    @property
    def id(self) -> str:
        return Path(self.file).stem


def brief(v) -> dict:
    out = {k: getattr(v, k, None) for k in BRIEF_KEYS}
    if isinstance(out["message"], str):
        out["message"] = out["message"][-600:]
    stats = getattr(v, "runtime_stats", None) or {}
    # the timing's own evidence (stream checks, head start, device clock), for reading a verdict afterwards
    out["timing"] = {k: stats.get(k) for k in TIMING_KEYS if stats.get(k) is not None}
    return out


def summary(v) -> str:
    return json.dumps(brief(v), default=str)


def report(rel: str, problem: str, v) -> None:
    """One JSON line per verdict to ``KBENCH_ADV_REPORT`` when it is set."""
    path = os.environ.get("KBENCH_ADV_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"candidate": rel, "problem": problem, **brief(v)}, default=str) + "\n")


def catches(v) -> set[str]:
    got = {f"failure:{v.failure}"} if v.failure else set()
    return got | {"flag:" + str(f).split(":", 1)[0].strip() for f in v.flags}


def defeated(cheat: Cheat, v, honest, min_ratio: float) -> str | None:
    """Why a harness-tampering cheat did no harm, or None. ``honest()`` is the verdict on the
    honest candidate whose time a forged time is held to; under ``min_ratio`` of it is forged."""
    text = (v.message or "") + (v.error or "")
    if "CHEAT TARGET MISSING" in text:
        return "its target is not reachable from the candidate's process"
    if cheat.forges_time and v.correct and not v.flags and v.runtime_ms:
        h = honest()
        if h.correct and h.runtime_ms and v.runtime_ms >= min_ratio * h.runtime_ms:
            return f"the time was measured honestly anyway ({v.runtime_ms:.4g} ms vs honest {h.runtime_ms:.4g} ms)"
    return None


def assert_caught(cheat: Cheat, v, honest, min_ratio: float, folder: str = "cheats") -> None:
    """The test of one cheat: caught, and by the defence it names."""
    s = summary(v)
    print(f"{folder}/{cheat.file}: {s}")
    if cheat.tamper:
        why = defeated(cheat, v, honest, min_ratio)
        if why:
            print(f"defeated: {why}")
            return
    assert v.failure not in ("compile_error", "load_error"), f"the cheat did not run, so it proves nothing: {s}"
    assert (not v.correct) or v.flags, f"NOT CAUGHT (correct, no flag): {s}"
    got = catches(v)
    if cheat.any_of:
        assert got & set(cheat.any_of), f"caught, but not by the expected defence (any of {cheat.any_of}); got {sorted(got)}: {s}"
    missing = [c for c in cheat.all_of if c not in got]
    assert not missing, f"the expected defence did not fire: missing {missing}; got {sorted(got)}: {s}"
