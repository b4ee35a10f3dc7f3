"""The candidate's profile checked: its kernels and device times, cleaned of what a report cannot
hold, against the guards' rules.
"""
from __future__ import annotations

from collections import Counter

from . import reference_store
from ..measure import profiling
from ..core.candidates import KERNEL_BACKENDS, Candidate
from .prepared import PreparedProblem
from .verdict import JudgeOptions, Verdict
from ..scoring import protocols
from .worker_reports import _count, _last, _real


def _clean_profile(cand: dict) -> tuple[dict, list[str]]:
    """The profile message's fields with the types the records need, and the names of the fields
    that were malformed (their bad entries dropped). The worker's profile is the candidate's
    process's: a value like ``{"count": 1 << 40}`` or ``{"name": 3}`` would otherwise break the
    record's columns when a batch writes it."""
    bad: list[str] = []
    out: dict = {}
    n = cand.get("n_kernels")
    out["n_kernels"] = None if n is None else _count(n)
    if n is not None and (out["n_kernels"] is None or out["n_kernels"] != n):
        bad.append("n_kernels")
    share = cand.get("custom_kernel_share")
    out["custom_kernel_share"] = None if share is None else _real(share, 0.0, 1.0)
    if share is not None and out["custom_kernel_share"] is None:
        bad.append("custom_kernel_share")
    total = cand.get("device_us")
    out["device_us"] = None if total is None else _real(total, 0.0)
    if total is not None and out["device_us"] is None:
        bad.append("device_us")
    top, raw = [], cand.get("top_kernels") or []
    if not isinstance(raw, list):
        bad.append("top_kernels")
        raw = []
    for item in raw[:5]:
        if isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str) and _real(item[1], 0.0, 1.0) is not None:
            top.append([item[0][:120], float(item[1])])
        elif "top_kernels" not in bad:
            bad.append("top_kernels")
    out["top_kernels"] = top
    ops, raw = {}, cand.get("ops") or {}
    if not isinstance(raw, dict):
        bad.append("ops")
        raw = {}
    if len(raw) > 1000:  # distinct ATen op names: no forward of this benchmark runs that many
        bad.append("ops")
    for name, c in list(raw.items())[:1000]:
        k = _count(c)
        if isinstance(name, str) and k is not None:
            ops[name[:240]] = k
        if (k is None or k != c or not isinstance(name, str) or len(name) > 240) and "ops" not in bad:
            bad.append("ops")
    out["ops"] = ops
    kernels, raw = [], cand.get("kernels") or []
    if not isinstance(raw, list):
        bad.append("kernels")
        raw = []
    for r in raw[:profiling.MAX_KERNEL_ROWS]:
        ok = isinstance(r, dict) and isinstance(r.get("name"), str) and (r.get("op") is None or isinstance(r.get("op"), str))
        count, us = (_count(r.get("count")), _real(r.get("device_us"))) if ok else (None, None)
        if ok and count is not None and us is not None:
            kernels.append({"name": r["name"][:profiling.MAX_KERNEL_NAME], "op": r["op"][:240] if r.get("op") else None,
                            "count": count, "device_us": us})
            ok = count == r.get("count")
        if not (ok and count is not None and us is not None) and "kernels" not in bad:
            bad.append("kernels")
    if len(raw) > profiling.MAX_KERNEL_ROWS and "kernels" not in bad:
        bad.append("kernels")
    out["kernels"] = kernels
    return out, bad


def _check_profile(v: Verdict, res, prep: PreparedProblem, candidate: Candidate, opts: JudgeOptions) -> None:
    """What the candidate's forward ran, against what the reference's runs (threat #1-#3)."""
    prof = _last(res.messages, "profile")
    if not prof:
        return
    raw = prof.get("profile")
    if not isinstance(raw, dict):
        v.flags.append("profile_malformed: the run's profile message carried no profile")
        return
    cand, bad = _clean_profile(raw)
    if bad:
        v.flags.append(f"profile_malformed: malformed fields in the run's profile ({', '.join(bad)}); bad entries dropped")
    v.n_kernels, v.custom_kernel_share = cand["n_kernels"], cand["custom_kernel_share"]
    v.top_kernels = cand["top_kernels"]
    ref = prep.reference_profile()
    reference_store.mark_stored(v.stage_s, prep, ["profile"], "reference_profile")
    v.profile_ops, v.profile_kernels = cand["ops"], cand["kernels"]
    v.reference_ops, v.reference_kernels, v.reference_n_kernels = dict(ref["ops"]), list(ref.get("kernels") or []), ref.get("n_kernels")
    # a library kernel that no op launched in this profile (a CUDA-graph replay of captured library
    # calls) is still the library's: known by its name (profiling.unlaunched_library_us)
    unlaunched = profiling.unlaunched_library_us(v.reference_kernels, cand["kernels"])
    if unlaunched and cand["device_us"] and v.custom_kernel_share is not None:
        v.custom_kernel_share = max(0.0, v.custom_kernel_share - unlaunched / cand["device_us"])
    if not opts.policy.on("library_passthrough"):
        return
    replayed = profiling.replayed_ops(v.reference_ops, v.reference_kernels, cand["kernels"])
    ran = Counter(cand["ops"])
    ran.update(replayed)
    same = profiling.passthrough(ref["ops"], ran)
    share = v.custom_kernel_share
    if candidate.backend in KERNEL_BACKENDS and share is not None and share < opts.policy.min_custom_share and not same:
        v.flags.append(f"library_does_the_work: the candidate's own kernels took {share:.2%} of its device time")
    if same:
        launching = {r.get("op") for r in v.reference_kernels}
        how = sorted(op for op in replayed if op in launching and cand["ops"].get(op, 0) < ref["ops"][op])
        v.flags.append(f"library_passthrough: the candidate's forward ran all of the reference's compute ops itself ({', '.join(same)})"
                       + (f"; {', '.join(how)} as the library's own kernels with no op launching them (a CUDA-graph replay)" if how else ""))


def _check_profile_due(v: Verdict, res, prep: PreparedProblem, opts: JudgeOptions, timed: dict) -> None:
    """A run that reported no profile where one was due: ``profile_missing`` (a cheat: a candidate
    can suppress the report to hide what its forward ran). None is due where the configuration it is
    timed in (``timed``, its result) fails under every protocol: the worker profiles only after it
    passed its checks (with timing off, on a checked set). Where the worker's checks stopped (a
    failure elsewhere left the CUDA context unusable), nothing more could run in that process: the
    flag is ``context_lost``, a hazard, naming the failure."""
    if not opts.guards or _last(res.messages, "profile") or any(f.startswith("profile_failed") for f in v.flags):
        return
    if not protocols.may_pass(timed, prep.precision):
        return
    stopped = _last(res.messages, "stopped")
    case = stopped.get("case") if stopped else None
    if isinstance(case, int) and 0 <= case < len(prep.specs) and prep.specs[case].config.name != timed["config"]:
        v.flags.append(f"context_lost: {str(stopped.get('reason') or 'the checks stopped')[:300]}; "
                       "the run stopped before its profile and timed calls")
        return
    v.flags.append("profile_missing: the run reported no profile of the candidate's forward")
