"""The timed run checked: its timing statistics, the outputs of its timed calls re-checked on
samples, and the timed variants.
"""
from __future__ import annotations

import torch

from ..scoring import protocols
from . import config_checks
from ..measure import tensorfile
from ..measure.compare import fingerprint, is_fingerprint, measure_outputs, unchanged
from .prepared import PreparedProblem
from ..isolation.worker.timed import timing_file
from ..scoring.metrics import times_a_kernel
from .verdict import JudgeError, JudgeOptions, Verdict
from .worker_reports import _count, _last, _plain_json, _real
from .stage_times import _stage_parts
from .outputs import _OutDir, _result_cap


def _check_timed_outputs(v: Verdict, res, prep: PreparedProblem, out: _OutDir, opts: JudgeOptions, default: dict) -> bool:
    """The default configuration's timed outputs re-checked (folded into ``default``'s result: a
    wrong timed output fails it as a wrong checked one does), and its time. False when there is
    no trustworthy time (a malformed report, a hard failure of the re-check)."""
    stats = _timing_stats(_last(res.messages, "timing").get("timing"))
    if isinstance(stats, str):
        config_checks.fail_config(default, "crash", f"[{default['config']}] the worker's timing report is malformed: {stats}")
        return False
    r = _recheck_samples(v, res, prep, out, "timing.kbt", prep.timing_groups[0][1], opts, "", default["config"])
    config_checks.add_set(default, r, count=False)
    if not protocols.may_pass(default, prep.precision):
        return False  # wrong timed outputs under every protocol: no time to keep
    v.runtime_ms, v.runtime_stats = stats["median_ms"], stats
    _stage_parts(v, "run_timing", stats.get("phase_s"), _TIMING_PARTS)
    return True


_TIMING_PARTS = ("inputs", "setup", "warmup", "trials", "device_clock", "write")  # timing.Timing.phase_s, the worker's
_STAT_NUMBERS = ("mean_ms", "std_ms", "p10_ms", "p90_ms", "min_ms", "rse", "first_round_ms", "device_ms", "device_union_ms", "stream_ms", "head_start_us",
                 "first_round_issue_us", "first_run_ms", "others_cpu_s", "host_probe_ms", "host_wait_s", "first_round_fastest_ms")
_STAT_COUNTS = ("n_trials", "unjoined_trials", "device_calls", "remeasured", "warmup_calls", "late_issues", "first_round_late", "others", "host_probes",
                "host_drift", "host_wait_reached", "host_moved", "first_round_excused", "host_retried")


def _timing_stats(stats) -> dict | str:
    """A timing message's stats when well-formed (a positive finite ``median_ms``; the other
    fields the records keep numbers or absent), else what is wrong with them."""
    if not isinstance(stats, dict):
        return "no timing statistics"
    med = stats.get("median_ms")
    if _real(med) is None or med <= 0:
        return f"median_ms {str(med)[:40]!r} is not a positive finite number"
    for k in _STAT_NUMBERS:
        if stats.get(k) is not None and _real(stats[k]) is None:
            return f"{k} {str(stats[k])[:40]!r} is not a finite non-negative number"
    for k in _STAT_COUNTS:
        if stats.get(k) is not None and (_count(stats[k]) is None or _count(stats[k]) != stats[k]):
            return f"{k} {str(stats[k])[:40]!r} is not a count"
    return stats


def _timed_cases(res, prep: PreparedProblem, timed: list[int], config: str | None = None) -> tuple[dict | None, str | None]:
    """The judge's own cases for one timed run's sets, as the worker drew them: each set's seed
    came from the OS at its first timed call (no seed of a timed set exists earlier, so none can be
    answered ahead) and is reported in ``timed_inputs`` with the inputs' fingerprints. The judge
    draws the same sets and runs its reference on them; fingerprints that differ mean the drawing
    was steered. Returns (index -> Case, None) or (None, why)."""
    keys = {str(i) for i in timed}
    reports = [m for m in res.messages if isinstance(m, dict) and m.get("event") == "timed_inputs" and m.get("config") == config]
    if len(reports) != 1 or not isinstance(reports[0].get("cases"), dict) or set(reports[0]["cases"]) != keys:
        return None, "the worker reported no seeds and fingerprints of the timed input sets it drew (or more than one report)"
    got = reports[0]["cases"]
    cases = {}
    for i in timed:
        entry = got[str(i)]
        seed = entry.get("seed") if isinstance(entry, dict) else None
        if type(seed) is not int or not 0 <= seed < 1 << 63:
            return None, f"the report of timed input set {i} holds no seed"
        try:
            case = prep.timed_case(i, seed)
        except Exception as e:  # noqa: BLE001 - the reference ran on every other set of this configuration
            raise JudgeError(f"the reference failed on timed input set {i} (seed {seed}): {type(e).__name__}: {e}") from e
        mine = _plain_json([t["sums"] if is_fingerprint(t) else None for t in case.inputs])
        if _plain_json(entry.get("inputs")) != mine:
            return None, f"timed input set {i} ({prep.cases[i].config}) is not the judge's: its drawing was steered"
        cases[i] = case
    cases["written"] = reports[0].get("written")
    return cases, None


def _rewritten(tdata: dict, written, device: str | None) -> str | None:
    """Why the timing record read back is not the one the worker reported writing (fingerprints of
    its samples and its inputs-after, sent right after the write), or None. Candidate code can run
    after the write (a finalizer, a patched property); a record it rewrote then no longer matches."""
    if not isinstance(written, dict):
        return "came with no report of what was written"
    samples = tdata.get("samples") or {}
    try:
        mine = {k: [fingerprint(o)["sums"] if isinstance(o, torch.Tensor) else None for o in outs] for k, outs in samples.items()}
    except Exception as e:  # noqa: BLE001 - a sample that is not a list of tensors
        return f"holds samples that cannot be read back ({type(e).__name__})"
    if _plain_json(mine) != _plain_json(written.get("samples") or {}) or \
            _plain_json(tdata.get("inputs_after")) != _plain_json(written.get("inputs_after")):
        return "was rewritten after the worker wrote it (its samples or inputs differ from the worker's report of them)"
    return None


def _recheck_samples(v: Verdict, res, prep: PreparedProblem, out: _OutDir, name: str, timed: list[int], opts: JudgeOptions,
                     where: str, config: str, timed_config: str | None = None) -> config_checks.SetResult:
    """Re-checks the sampled timed outputs of one timed run (phase detection, memoisation:
    threat #8, #9) and the inputs as the timed calls left them; the result as one more set of
    ``config``'s. ``timed``: the indices of that run's timed input sets; the worker samples every
    one of them (each set's first call always) and reports every set's inputs, so the keys of both
    must be exactly these (a sample of no set, or of another group's, is a forged record).
    ``where``: " on <variant>"; ``timed_config``: that variant's name (None: the default's)."""
    cmp_dev = prep.device if prep.device.startswith("cuda") else None
    tag = f"[{config}]"

    def hard(failure: str, message: str) -> config_checks.SetResult:
        return config_checks.SetResult(failure, f"{tag} {message}")

    try:
        tdata = out.read(name, cmp_dev, _result_cap([prep.cases[i].expected for i in timed]))
    except (tensorfile.TensorFileError, OSError) as e:
        return hard("crash", f"no readable timing record{where}: {e}")
    if not isinstance(tdata, dict):
        return hard("crash", f"the timing record{where} is not a record")
    samples, afters = tdata.get("samples"), tdata.get("inputs_after")
    keys = {str(i) for i in timed}
    for what, got in (("sampled outputs", samples), ("inputs after the timed calls", afters)):
        if what == "sampled outputs" and not got:
            continue  # nothing sampled (guards off): flagged below when guards are on
        if not isinstance(got, dict) or set(got) != keys:
            shown = sorted(map(str, got))[:8] if isinstance(got, dict) else type(got).__name__
            return hard("crash", f"the timing record{where} has {what} for sets {shown}, not the timed sets {sorted(keys)[:8]}")
    drawn, steered = _timed_cases(res, prep, timed, timed_config)
    if steered:
        return hard("input_mutated", f"during timing{where}: {steered}")
    rewritten = _rewritten(tdata, drawn.pop("written"), cmp_dev)
    if rewritten:
        return hard("crash", f"the timing record{where} {rewritten}")
    tol = protocols.tolerance(opts.protocol, prep.precision)
    need, worst, over = 0.0, 0.0, None
    for idx, outs in (samples or {}).items():
        m = measure_outputs(drawn[int(idx)].expected, outs, what="timed output", device=cmp_dev)
        if m.hard is not None:
            return hard(m.hard.failure, f"output during timing{where} differs from the reference: {m.hard.message}")
        need, worst = max(need, m.tol_needed), max(worst, m.max_abs_err)
        found = m.mismatch(tol)
        if found is not None and over is None:
            over = f"{tag} output during timing{where} differs from the reference: {found.message}"
    for idx, after in afters.items():
        changed = unchanged(drawn[int(idx)].inputs, after, cmp_dev)
        if changed:
            return hard("input_mutated", f"during timing{where}: {changed}")
    if opts.guards and not samples:
        v.flags.append(f"timing_unchecked: no timed output{where} could be sampled for re-checking")
    return config_checks.SetResult(None, None, need, worst, over)


def _time_variants(v: Verdict, res, prep: PreparedProblem, out: _OutDir, opts: JudgeOptions, configs: list[dict]) -> None:
    """``time_variants``: each variant's timed outputs re-checked as the default's are (folded into
    that variant's result: a wrong output there fails it), its time, the eager baseline's on the
    same sets, the speedup. A variant that failed its checks was not timed."""
    by_name = {c["config"]: c for c in configs}
    reported = {m.get("config"): m.get("timing") for m in res.messages
                if isinstance(m, dict) and m.get("event") == "variant_timing" and isinstance(m.get("config"), str)}
    for name, timed, _ in prep.timed_variants:
        c = by_name[name]
        if c["hard_failure"] or not c["checked"]:
            continue
        stats = reported.get(name)
        if not isinstance(stats, dict):
            config_checks.fail_config(c, "crash", f"[{name}] the worker reported no timing of variant {name}")
            continue
        stats = _timing_stats(stats)
        if isinstance(stats, str):
            config_checks.fail_config(c, "crash", f"[{name}] the worker's timing report of variant {name} is malformed: {stats}")
            continue
        r = _recheck_samples(v, res, prep, out, timing_file(timed, name), timed, opts, f" on {name}", name, timed_config=name)
        config_checks.add_set(c, r, count=False)
        if not protocols.may_pass(c, prep.precision):
            continue  # wrong timed outputs under every protocol: no speedup on this variant
        base = prep.variant_baseline(name, opts).median_ms
        v.variant_timings[name] = {"runtime_ms": stats["median_ms"], "baseline_ms": base, "speedup": base / stats["median_ms"] if times_a_kernel(v.device, v.small) else None,
                                   "sol_ms": prep.variant_sol_ms(name)}
