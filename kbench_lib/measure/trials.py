"""The timed calls' runs: warm-up, the stopping rule, and a run measured again when it drifts
(docs/JUDGING.md "Timing"). The calls themselves (CUDA: flushed, behind a head start, timed with
events; the CPU: a monotonic clock) are :mod:`.timing`'s, handed here as a ``trial`` or a ``clock``.

Warm-up continues until the call's own time has settled (a GPU coming out of an idle clock state
runs several times slower for a while). A timed run goes on until at least ``min_trials`` ran and
either the relative standard error of the median estimate is under ``target_rse`` or ``budget_s``
is spent (never beyond ``max_trials``); a run whose first and second halves disagree by more than
:data:`.timing_summary.DRIFT` is discarded and run again (at most ``MAX_REMEASURE`` times), unless
the host-speed probes of its halves say the drift followed the host's speed.

The functions this module calls are bound at import time: the worker imports it before any
candidate code runs and checks every global of it afterwards (threat #14).
"""
from __future__ import annotations

import collections
import statistics
import time

from .host_speed import HostProbes, drift_follows_host
from .timing_summary import DRIFT_FLOOR_MS, Timing, drifted, half_medians, median_rse, summarize

_monotonic = time.monotonic

MAX_REMEASURE = 2
# the default timing budget (``JudgeOptions.timing_budget_s``, the CLI's ``--timing-budget``): a side's
# timed run ends once this many seconds are spent (or the median is precise enough first); with the
# span below, a side takes at most 2.5 s of timed runs. A longer budget does not steady a host-bound
# model's median (results/README.md, "Judge throughput": 10 s against 1 s on level 3)
BUDGET_S = 1.0
# a side's timed runs (the first, its re-measurements, a run again on a fast CPU) end within this
# many budgets of the first one's start: one that would not is not begun, and the last run stands
MAX_SPAN = 2.5
SETTLE = 0.03  # warm-up ends once two consecutive blocks of calls agree this closely
SETTLE_BLOCK = 5
SETTLE_MAX_S = 2.0

RSE_EVERY = 10  # trials between two evaluations of the stopping rule once min_trials ran
TRIALS_FLOOR = 20  # the fewest timed calls of a run whose min_trials would outlast its budget (long calls)


def _done(samples: list[float], started: float, min_trials: int, max_trials: int, budget_s: float, target_rse: float,
          floor_trials: int = 0) -> bool:
    """Whether a timed run has enough calls: ``max_trials``; else at least ``min_trials`` and then
    the budget spent or the median's relative error under ``target_rse``. ``min_trials`` yields to the
    budget past ``floor_trials`` calls: a model of hundreds of kernels (a level-3 LSTM, 100 ms a call)
    would otherwise spend 100 calls, ten times the budget, on a median that 20 calls already pin
    down; the cost of a run grows with the work it measures, not with a fixed count of calls."""
    n = len(samples)
    if n >= max_trials:
        return True
    if n < min_trials:
        return 0 < floor_trials <= n and _monotonic() - started > budget_s
    if _monotonic() - started > budget_s:
        return True
    return (n - min_trials) % RSE_EVERY == 0 and median_rse(samples) < target_rse


def past_span(started: float, runs: int, deadline: float) -> bool:
    """Whether one more run, as long as each of the ``runs`` begun at ``started`` took on average,
    would end after ``deadline`` (the timing's span: :data:`MAX_SPAN` budgets)."""
    now = _monotonic()
    return now + (now - started) / runs > deadline


def _warm_up(fn, warm: list, n_timed_sets: int, warmup_ms: float, sync=None, clock=None) -> int:
    """Calls ``fn`` until ``warmup_ms`` have passed, at least once per warm-up set and at least
    ``n_timed_sets + 1`` times, holding the last ``n_timed_sets + 1`` outputs alive as the timed loop
    does (its caller keeps one output per input set for re-checking). The caching allocator thus
    holds enough blocks before the first timed call: otherwise the first round pays for fresh
    device allocations (hundreds of microseconds each) that later rounds do not, which reads as
    a kernel that is fast only on data it has seen (the memoisation check).

    ``clock(args) -> (ms, output)`` makes each call (CUDA: flushed, synchronised, timed); without
    it calls are plain, followed by ``sync()`` when given. With a clock, warm-up also goes on until two consecutive
    blocks of ``SETTLE_BLOCK`` calls agree within ``SETTLE`` (at most ``SETTLE_MAX_S`` longer): a
    GPU leaving an idle clock state runs slow for a while."""
    held: collections.deque = collections.deque(maxlen=n_timed_sets + 1)
    started = _monotonic()
    i = 0
    times: list[float] = []

    def settled() -> bool:
        if clock is None:
            return True
        if len(times) < 2 * SETTLE_BLOCK:
            return False
        if _monotonic() - started > warmup_ms / 1e3 + SETTLE_MAX_S:
            return True
        a = statistics.median(times[-2 * SETTLE_BLOCK: -SETTLE_BLOCK])
        b = statistics.median(times[-SETTLE_BLOCK:])
        return abs(a - b) <= max(SETTLE * min(a, b), DRIFT_FLOOR_MS)

    while i < max(len(warm), n_timed_sets + 1) or (_monotonic() - started) * 1e3 < warmup_ms or not settled():
        args = warm[i % len(warm)]
        if clock is None:
            held.append(fn(*args))
            if sync is not None:
                sync()
        else:
            t, out = clock(args)
            held.append(out)
            times.append(t)
        i += 1
        if i > 10000:
            break
    held.clear()
    return i


def _runs(trial, n_sets: int, first_round: bool, after_call, min_trials, max_trials, budget_s, target_rse,
          max_remeasure: int = MAX_REMEASURE, probes: HostProbes | None = None, deadline: float | None = None) -> Timing:
    """Timed runs of ``trial(set_index) -> (ms, unjoined, output)`` until one does not drift (at most
    ``max_remeasure`` re-measurements). The first round (first calls on unseen data, when warm-up
    ran on other sets) is taken from the first run and kept out of the drift check: a check that
    discarded it would hide exactly what the memoisation check looks for.

    ``probes`` (the host's speed between the calls, :class:`HostProbes`; the trial reports each call
    to it): a run whose drift followed the host's speed (:func:`.host_speed.drift_follows_host`) is
    kept, not measured again, and ``Timing.host_drift`` says so.

    ``after_call(k, set_index, output)`` sees every call of every run, ``k`` counting from 0 again
    in a run measured anew, so a caller that samples outputs for re-checking samples the run whose
    times are reported: sampling the first run only let a candidate drift on purpose in an honest
    first run and skip its work in the re-measured one.

    ``deadline`` (a :func:`time.monotonic` time): a re-measurement is begun only where a run as long
    as the last one ends before it; else the last run stands and ``Timing.span_cut`` says so. Without
    it a run of long calls that drifts takes ``1 + max_remeasure`` budgets (a level-3 recurrent model's
    baseline, timed at a 10 s budget, took 83 s on an H200)."""
    remeasured = 0
    first = first_fastest = first_rest = None
    # every timed set is called in every run: the re-check expects a sample of each
    min_trials, max_trials = max(min_trials, n_sets), max(max_trials, n_sets)
    # past the budget, at least TRIALS_FLOOR calls and every set called twice (its first call and a repeat)
    floor_trials = min(min_trials, max(TRIALS_FLOOR, 2 * n_sets))
    host_drift = span_cut = 0
    while True:
        samples: list[float] = []
        unjoined = 0
        if probes is not None:
            probes.new_run()
        started = _monotonic()
        k = 0
        while not _done(samples, started, min_trials, max_trials, budget_s, target_rse, floor_trials):
            set_index = k % n_sets
            t, late, out = trial(set_index)
            samples.append(t)
            unjoined += late
            if after_call is not None:  # every run: the reported one is the run whose outputs are sampled
                after_call(k, set_index, out)
            del out
            k += 1
        if remeasured == 0 and first_round:
            first = summarize(samples, 0, n_sets).first_round_ms
            first_fastest = min(samples[:n_sets]) if first is not None else None
            first_rest = statistics.median(samples[n_sets:]) if len(samples) > n_sets else None
        checked_from = n_sets if first_round else 0
        if remeasured >= max_remeasure or not drifted(samples[checked_from:]):
            break
        if probes is not None and _drift_follows_host(samples, checked_from, probes):
            host_drift = 1
            break
        if deadline is not None and past_span(started, 1, deadline):
            span_cut = 1
            break
        remeasured += 1
    result = summarize(samples, unjoined)
    result.first_round_ms, result.first_round_fastest_ms = first, first_fastest
    result.first_run_ms, result.remeasured, result.host_drift = first_rest, remeasured, host_drift
    result.span_cut = span_cut
    return result


def _drift_follows_host(samples: list[float], checked_from: int, probes: HostProbes) -> bool:
    """Whether the run's drift (its calls from ``checked_from`` on, split in halves as
    :func:`.timing_summary.drifted` splits them) followed the host's speed over the same halves."""
    checked = samples[checked_from:]
    return drift_follows_host(*half_medians(checked), *probes.halves(checked_from + len(checked) // 2, checked_from))
