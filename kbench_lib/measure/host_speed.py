"""The host's speed while a run is timed: a fixed piece of pure Python work, timed between trials.

A host-bound call (:func:`kbench_lib.measure.timing_summary.host_bound`) spends its end-to-end
time issuing work from the CPU, so its time follows how fast the host runs at that moment. On the
H200 virtual machines kbench is measured on, that speed is not steady: a pure-Python loop of 200,000
additions took 7.3 ms in some seconds and 15.8 ms in others, in one process with nothing else
running, pinned to one core or not; the host issue time of a level-3 LSTMP call moved with it
(11.7 against 16.8 ms), while its device-busy time stayed at 9.1 ms (2026-11-28). Two timings of
the same work taken in different host states differ by that much, and no clock on the GPU can
tell why.

:class:`HostProbes` times :func:`probe_ms` (a loop of :data:`PROBE_LOOPS` additions, 1-3 ms)
after a timed call, outside its window, at most once every :data:`PROBE_EVERY_S` seconds, and never
inside the first round of calls (the first call on each input set), which the memoisation check
reads: with probes there, the first round of a 7 us call read 42 us on an H200 (2026-11-28). The
median of those samples is the timing's ``host_probe_ms``. The baseline's and the candidate's
probes come from the same code, so the ratio of the two says whether they were timed at the same
host speed. A verdict's trust never depends on it; it decides which host-bound eager baselines the
reference store keeps (:func:`at_full_speed`).

The functions this module calls are bound at import (the worker imports it before any candidate
code runs and checks the bindings afterwards: :mod:`kbench_lib.isolation.worker.tamper`)."""
from __future__ import annotations

import statistics
import time

_perf_counter_ns = time.perf_counter_ns
_monotonic = time.monotonic
_median = statistics.median

PROBE_LOOPS = 40_000  # additions per probe: about 1.5 ms on an H200 host at its full speed, 3 ms at its slow one
PROBE_EVERY_S = 0.1  # at most one probe per this many seconds of timed calls (1-2 % of the time spent)
FULL_SPEED = 1.25  # a timing whose probes' median is within this factor of the fastest probe seen ran at the host's full speed
SEEN_ENOUGH = 30  # ... once this process has taken at least this many probes (its fastest says little before)

_SEEN = {"n": 0, "fastest": None}  # probes this process has taken (of PROBE_LOOPS), and the fastest of them


def probe_ms(loops: int = PROBE_LOOPS) -> float:
    """Milliseconds the host takes for ``loops`` additions in the interpreter (no allocation
    beyond small integers, no I/O, no GPU): its speed at this moment."""
    t0 = _perf_counter_ns()
    s = 0
    for i in range(loops):
        s += i
    return (_perf_counter_ns() - t0) / 1e6


class HostProbes:
    """Samples of :func:`probe_ms` taken over a timed run, at most one per ``every_s`` seconds."""

    def __init__(self, every_s: float = PROBE_EVERY_S, loops: int = PROBE_LOOPS):
        self.every_s, self.loops = every_s, loops
        self.samples: list[float] = []
        self._last: float | None = None

    def maybe(self) -> None:
        """A probe now if ``every_s`` have passed since the last one (or none was taken)."""
        now = _monotonic()
        if self._last is None or now - self._last >= self.every_s:
            ms = probe_ms(self.loops)
            self.samples.append(ms)
            if self.loops == PROBE_LOOPS:
                _SEEN["n"] += 1
                _SEEN["fastest"] = ms if _SEEN["fastest"] is None else min(_SEEN["fastest"], ms)
            self._last = _monotonic()

    def median_ms(self) -> float | None:
        return round(_median(self.samples), 4) if self.samples else None


def sample() -> float:
    """One probe now, counted among this process's (the judge takes one per job it writes, so that
    what it knows of the host's full speed grows with a batch even where nothing is timed)."""
    probes = HostProbes(every_s=0.0)
    probes.maybe()
    return probes.samples[0]


def at_full_speed(run_probe_ms: float | None) -> bool:
    """Whether a timing whose probes' median is ``run_probe_ms`` ran at the host's full speed:
    within :data:`FULL_SPEED` of the fastest probe this process has taken, once it has taken
    :data:`SEEN_ENOUGH`. False where either is unknown (no probe, too few seen)."""
    fastest = _SEEN["fastest"]
    return bool(run_probe_ms) and _SEEN["n"] >= SEEN_ENOUGH and fastest is not None and run_probe_ms <= FULL_SPEED * fastest


def speed_ratio(candidate_probe_ms: float | None, baseline_probe_ms: float | None) -> float | None:
    """How much slower the host ran while the baseline was timed than while the candidate was
    (``baseline / candidate`` probe time: above 1, the baseline's host was slower, which favours
    a host-bound candidate's speedup). None where either side has no probe."""
    if not candidate_probe_ms or not baseline_probe_ms:
        return None
    return baseline_probe_ms / candidate_probe_ms


__all__ = ["FULL_SPEED", "PROBE_EVERY_S", "PROBE_LOOPS", "SEEN_ENOUGH", "HostProbes", "at_full_speed", "probe_ms", "sample", "speed_ratio"]
