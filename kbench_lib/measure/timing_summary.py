"""What a timed run reports (:class:`Timing`) and the statistics behind it: the median and its
quantiles, the relative standard error of the median that the stopping rule asks for, and the drift
check that sends a run whose halves disagree to be measured again (:mod:`kbench_lib.measure.timing`)."""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field

from .host_speed import speed_ratio

DRIFT = 0.03  # first and second half of a timed run may differ by this much (relative medians)
DRIFT_FLOOR_MS = 0.002  # ... or by this much in absolute terms (event resolution, ~0.5 us)
HOST_SHARE = 0.8  # a call whose device was busy for less than this share of its timed time holds host time


@dataclass
class Timing:
    median_ms: float
    mean_ms: float
    std_ms: float
    p10_ms: float
    p90_ms: float
    min_ms: float
    n_trials: int
    rse: float  # relative standard error of the median estimate
    unjoined_trials: int = 0  # trials whose work outlived the call on another stream
    first_round_ms: float | None = None  # median of the first call on each input set
    first_round_fastest_ms: float | None = None  # the fastest of them (the memoisation check's: a memoiser is slow on every first call)
    device_ms: float | None = None  # device-busy clock: median over profiled calls of kernel time summed over streams
    device_calls: int = 0  # profiled calls behind device_ms
    device_union_ms: float | None = None  # median over the same calls of the time any stream was busy (overlaps once)
    stream_ms: float | None = None  # CUDA: median over the timed calls of start -> end on the calling stream alone (unjoined calls not corrected)
    remeasured: int = 0  # timed runs discarded as outliers (drift between halves) and run again
    head_start_us: float = 0.0  # CUDA: the device-filling spin before each timed call (0: none)
    late_issues: int = 0  # CUDA: timed calls (every run) whose host issue time outlasted their spin (host time in their time)
    unjoined_recheck: int = 0  # CUDA: unjoined calls of the re-check run after a run with too many (unjoined_suspected)
    recheck_calls: int = 0  # calls of that re-check (0: none was needed)
    warmup_calls: int = 0  # calls before the timed runs (warm-up and settling)
    first_round_late: int = 0  # CUDA: first-round calls whose host issue outlasted their spin (host time in their time)
    first_round_issue_us: float | None = None  # CUDA: median host issue time of the first-round calls
    first_round_excused: int = 0  # CUDA: first calls whose late gap behind the sync an idle gap right after them explained (timed on their stream)
    first_run_ms: float | None = None  # median of the first run's calls after its first round (the first round's peers)
    others: int = 0  # processes the candidate had running beside it when its timing began (the worker's count)
    others_cpu_s: float = 0.0  # CPU seconds they used while it was timed
    host_probe_ms: float | None = None  # CUDA: median time of the host-speed probe between timed calls (host_speed)
    host_probes: int = 0  # CUDA: probes behind host_probe_ms (the reported run's)
    host_wait_s: float | None = None  # CUDA: seconds spent finding a CPU at the host's full speed before the timed runs (None: not asked to)
    host_wait_reached: int = 0  # CUDA: 1 where one was found
    host_moved: int = 0  # CUDA: 1 where the timed calls ran pinned to another CPU, one at full speed (host_speed.to_a_fast_cpu)
    host_drift: int = 0  # CUDA: 1 where the reported run drifted between halves in step with the host's speed (kept, not measured again)
    host_retried: int = 0  # CUDA: 1 where a run of host-bound calls that ran slow was run again on a CPU at full speed (the reported run)
    span_cut: int = 0  # 1 where a re-measurement or a run again on a fast CPU was not begun: it would have ended past the timing's span (trials.MAX_SPAN budgets)
    trace: list | None = None  # CUDA, on request: the timed calls, [ms, host issue us, spin us, first on its set, unjoined]
    phase_s: dict = field(default_factory=dict)  # wall seconds per phase of the timing itself (the judge's own cost)

    def as_dict(self) -> dict:
        return asdict(self)


def _q(s: list[float], p: float) -> float:
    """The ``p`` quantile of the sorted samples ``s`` (nearest rank)."""
    return s[min(len(s) - 1, max(0, int(round(p * (len(s) - 1)))))]


def _median_rse(s: list[float], med: float, std: float | None) -> float:
    """Relative standard error of the median of the sorted samples ``s``: ~ 1.2533 * sigma / sqrt(n),
    sigma estimated robustly from the IQR (from ``std`` below four samples)."""
    n = len(s)
    if n >= 4:
        sigma = (_q(s, 0.75) - _q(s, 0.25)) / 1.349
    else:
        sigma = std if std is not None else (statistics.pstdev(s) if n > 1 else 0.0)
    return (1.2533 * sigma / math.sqrt(n)) / med if med > 0 else 0.0


def summarize(samples_ms: list[float], unjoined: int = 0, n_sets: int = 0) -> Timing:
    s = sorted(samples_ms)
    n = len(s)
    med = statistics.median(s)
    mean = statistics.fmean(s)
    std = statistics.pstdev(s) if n > 1 else 0.0
    rse = _median_rse(s, med, std)
    first = statistics.median(samples_ms[:n_sets]) if n_sets and n > n_sets else None
    return Timing(med, mean, std, _q(s, 0.10), _q(s, 0.90), s[0], n, rse, unjoined, first)


def drifted(samples_ms: list[float], tol: float = DRIFT, floor_ms: float = DRIFT_FLOOR_MS) -> bool:
    """Whether the first and second half of a run disagree: the clock, the GPU's state or another
    process changed while it ran, so its median describes neither half."""
    if len(samples_ms) < 20:
        return False
    a, b = half_medians(samples_ms)
    return abs(a - b) > max(tol * min(a, b), floor_ms)


def half_medians(samples_ms: list[float]) -> tuple[float, float]:
    """The medians of a run's first and second half (the second the longer where the count is odd),
    as :func:`drifted` compares them."""
    n = len(samples_ms)
    return statistics.median(samples_ms[: n // 2]), statistics.median(samples_ms[n // 2:])


def median_rse(samples_ms: list[float]) -> float:
    """``summarize(samples_ms).rse`` without the rest: the stopping rule asks for it after every few
    trials, and ``statistics.pstdev`` (exact rational arithmetic) over a thousand samples took
    longer than the trial it was deciding about."""
    s = sorted(samples_ms)
    return _median_rse(s, statistics.median(s), None)



def host_bound(t: Timing) -> bool:
    """Whether some stream was busy for less than :data:`HOST_SHARE` of the timed median: the rest
    of the end-to-end time is the host's (Python, launches one by one, host syncs), and follows how
    fast the host ran at the moment it was timed: a level-3 LSTMP call's end-to-end time can move
    between 11 and 20 ms from one second to the next while its device-busy time stays at 9.1 ms
    (:mod:`.host_speed`). False where no device clock was read."""
    return _host_bound(t.median_ms, t.device_union_ms)


def _host_bound(median_ms: float | None, busy_ms: float | None) -> bool:
    return busy_ms is not None and bool(median_ms) and busy_ms < HOST_SHARE * median_ms


def host_bound_note(timed: dict | None, baseline: dict | None) -> str | None:
    """A verdict's note where the candidate's or the baseline's timed run (``Timing.as_dict()``) was
    host-bound: its speedup then says how fast the host issued the work when each was timed, and
    the device-busy times beside it are the steadier comparison. None otherwise."""
    sides = []
    for name, d in (("candidate", timed), ("baseline", baseline)):
        busy, ms = (d or {}).get("device_union_ms"), (d or {}).get("median_ms")
        if _host_bound(ms, busy):
            sides.append(f"the {name}'s device was busy {busy:.4g} of {ms:.4g} ms")
    if not sides:
        return None
    t, b = (timed or {}).get("device_union_ms"), (baseline or {}).get("device_union_ms")
    device = f"; device-busy speedup {b / t:.3g}x" if t and b else ""
    return (f"host_bound: {' and '.join(sides)}: the end-to-end times hold the host's time to issue the work, "
            f"which follows the host's speed at the moment each was timed{device}{_host_speeds(timed, baseline)}")


def _host_speeds(timed: dict | None, baseline: dict | None) -> str:
    """The host-speed probes of both timings (:mod:`.host_speed`), for the note; empty without both."""
    c, b = (timed or {}).get("host_probe_ms"), (baseline or {}).get("host_probe_ms")
    ratio = speed_ratio(c, b) if isinstance(c, (int, float)) and isinstance(b, (int, float)) else None
    if ratio is None:
        return ""
    return f"; host-speed probe {c:.3g} ms while the candidate was timed, {b:.3g} ms while the baseline was ({ratio:.3g}x)"


__all__ = ["DRIFT", "DRIFT_FLOOR_MS", "HOST_SHARE", "Timing", "half_medians", "host_bound", "host_bound_note", "drifted", "median_rse", "summarize"]
