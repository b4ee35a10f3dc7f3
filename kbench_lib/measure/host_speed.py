"""The host's speed while a run is timed: a fixed piece of pure Python work, timed between trials.

A host-bound call (:func:`kbench_lib.measure.timing_summary.host_bound`) spends its end-to-end
time issuing work from the CPU, so its time follows how fast the host runs at that moment. On a
virtual machine that speed is not steady: a pure-Python loop can take twice as long in some seconds
as in others, in one process with nothing else running, pinned to one core or not, and a host-bound
call's end-to-end time moves with it while its device-busy time stays put. Two timings of the same
work taken in different host states differ by that much, and no clock on the GPU can tell why.
Each virtual CPU flips between its speeds on its own, and no one other CPU's load explains it
(``benchmarks/host_cpus.py``; results/README.md, "The host's speed").

:class:`HostProbes` times :func:`probe_ms` (a loop of :data:`PROBE_LOOPS` additions, 1-3 ms)
after a timed call, outside its window, at most once every :data:`PROBE_EVERY_S` seconds, and never
inside the first round of calls (the first call on each input set), which the memoisation check
reads: probes there slow the first calls (a 7 us call's first round can read 42 us), a false
memoisation flag. The
median of the reported run's samples is the timing's ``host_probe_ms``. The baseline's and the candidate's
probes come from the same code, so the ratio of the two says whether they were timed at the same
host speed. A verdict's trust never depends on it. It decides where a timing whose calls hold much
host time runs its timed calls (on a CPU at the host's full speed, the judge's and the worker's
alike: :func:`to_a_fast_cpu`), which host-bound eager baselines the reference store keeps
(:func:`at_full_speed`), and whether a run whose halves drifted apart is measured again (not where
the probes of its halves drifted with it: :func:`drift_follows_host`).

The functions this module calls are bound at import (the worker imports it before any candidate
code runs and checks the bindings afterwards: :mod:`kbench_lib.isolation.worker.tamper`)."""
from __future__ import annotations

import math
import os
import statistics
import time

_perf_counter_ns = time.perf_counter_ns
_monotonic = time.monotonic
_median = statistics.median
_sleep = time.sleep
_log = math.log
_getaffinity = getattr(os, "sched_getaffinity", None)
_setaffinity = getattr(os, "sched_setaffinity", None)

PROBE_LOOPS = 40_000  # additions per probe: about 1.5 ms at a server CPU's full speed, twice that in a slow spell
PROBE_EVERY_S = 0.1  # at most one probe per this many seconds of timed calls (1-2 % of the time spent)
FULL_SPEED = 1.25  # a timing whose probes' median is within this factor of the fastest probe seen ran at the host's full speed
SEEN_ENOUGH = 30  # ... once this process has taken at least this many probes (its fastest says little before)
WAIT_S = 3.0  # the longest a timing of host-bound calls looks for a CPU at the host's full speed (to_a_fast_cpu)
WAIT_EVERY_S = 0.02  # ... between two rounds over the CPUs
CALIBRATION_ROUNDS = 2  # probes on each CPU when a process learns its host's full speed (learn_full_speed)
HALF_PROBES = 3  # probes each half of a run needs before they may say its drift followed the host's speed
DRIFT_SLACK = 1.25  # a run's drift follows the host's if it is at most this times the probes' (logarithms), the same way

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
    """Samples of :func:`probe_ms` taken over a timed run, at most one per ``every_s`` seconds,
    each with the index (in its run) of the timed call it followed. A timing made of several runs
    (a drifting run is measured again) calls :meth:`new_run` at the start of each: the timing
    reports the probes of the run whose times it reports."""

    def __init__(self, every_s: float = PROBE_EVERY_S, loops: int = PROBE_LOOPS):
        self.every_s, self.loops = every_s, loops
        self.samples: list[float] = []  # every probe of every run, in order
        self.at: list[int] = []  # the index in its run of the call each probe followed (-1: outside a run)
        self.run_start = 0  # where the current run's probes begin in ``samples``
        self.calls = 0  # timed calls in the current run
        self._last: float | None = None

    def new_run(self) -> None:
        """A timed run begins: its calls are counted from 0, its probes apart from earlier runs'."""
        self.run_start, self.calls = len(self.samples), 0

    def after_call(self, may_probe: bool = True) -> None:
        """A timed call has returned (outside its window): counted, and a probe taken after it
        where ``may_probe`` and :meth:`maybe` says it is time."""
        self.calls += 1
        if may_probe:
            self.maybe(self.calls - 1)

    def maybe(self, at: int = -1) -> None:
        """A probe now if ``every_s`` have passed since the last one (or none was taken)."""
        now = _monotonic()
        if self._last is None or now - self._last >= self.every_s:
            self.record(probe_ms(self.loops), at)
            self._last = _monotonic()

    def record(self, ms: float, at: int = -1) -> None:
        """A probe of ``ms`` after the run's call ``at``, counted among the process's where it is
        of :data:`PROBE_LOOPS` additions (a probe of another size says nothing of the host's speed)."""
        self.samples.append(ms)
        self.at.append(at)
        if self.loops == PROBE_LOOPS:
            _SEEN["n"] += 1
            _SEEN["fastest"] = ms if _SEEN["fastest"] is None else min(_SEEN["fastest"], ms)

    def run_samples(self) -> list[float]:
        """The current run's probes."""
        return self.samples[self.run_start:]

    def median_ms(self) -> float | None:
        """The median of the current run's probes (None without one)."""
        run = self.run_samples()
        return round(_median(run), 4) if run else None

    def halves(self, split: int, start: int = 0) -> tuple[list[float], list[float]]:
        """The current run's probes taken after its calls ``start`` to ``split - 1``, and after
        those from ``split`` on."""
        pairs = list(zip(self.run_samples(), self.at[self.run_start:]))
        return [ms for ms, i in pairs if start <= i < split], [ms for ms, i in pairs if i >= split]


def drift_follows_host(first_ms: float, second_ms: float, probes_first: list[float], probes_second: list[float]) -> bool:
    """Whether a timed run whose halves' medians are ``first_ms`` and ``second_ms`` drifted because
    the host's speed changed: the probes of each half (at least :data:`HALF_PROBES`) moved the same
    way, by at least as much (up to :data:`DRIFT_SLACK`). A call's time holds the host's issue time
    and the device's; when the host slows by a factor, a call slows by at most that factor. Such a
    run is not measured again (:func:`kbench_lib.measure.trials._runs`): the host's slow spells last
    seconds and outlast the runs measured again, so measuring again costs time without bringing
    such a verdict closer to the truth."""
    if min(len(probes_first), len(probes_second)) < HALF_PROBES or min(first_ms, second_ms) <= 0:
        return False
    pa, pb = _median(probes_first), _median(probes_second)
    if pa <= 0 or pb <= 0:
        return False
    drift, host = _log(second_ms / first_ms), _log(pb / pa)
    return drift * host > 0 and abs(drift) <= DRIFT_SLACK * abs(host)


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


def full_speed_ms() -> float | None:
    """The fastest probe this process has taken, once it has taken :data:`SEEN_ENOUGH` (else None;
    :func:`learn_full_speed` takes them where too few were taken)."""
    return _SEEN["fastest"] if _SEEN["n"] >= SEEN_ENOUGH else None


def learn_full_speed() -> float | None:
    """:func:`full_speed_ms`, learnt first where this process has taken fewer than
    :data:`SEEN_ENOUGH` probes: probes on each CPU the calling thread may use in turn (at least
    :data:`CALIBRATION_ROUNDS` each, :data:`SEEN_ENOUGH` in all), the thread back on its CPUs
    after. Each virtual CPU of these machines flips between its full speed and about half of it on
    its own, so at any moment some CPU runs at full speed; probes all taken on one CPU in one of its
    slow spells would pass that spell off as the host's full speed. A judging process whose
    baselines all come from the reference store takes one probe per job only, fewer than
    :data:`SEEN_ENOUGH`; without this its workers would never know the host's full speed, never
    move to a CPU at it, and be timed on a slower host than the stored baselines they are compared
    with. Where threads cannot be pinned, the probes are taken where it runs."""
    if _SEEN["n"] < SEEN_ENOUGH:
        before = _thread_cpus()
        cpus = sorted(before or ())
        try:
            for _ in range(max(CALIBRATION_ROUNDS, -(-SEEN_ENOUGH // max(1, len(cpus))))):
                for cpu in cpus or [None]:
                    _pin(cpu)
                    sample()
        except OSError:  # a CPU taken away meanwhile: what was probed so far
            pass
        finally:
            back_to(before)
    return full_speed_ms()


def to_a_fast_cpu(fastest_ms: float | None = None, max_s: float | None = None,
                  every_s: float = WAIT_EVERY_S) -> tuple[float | None, int | None, set | None]:
    """Probes (each counted as :func:`sample`'s) where the calling thread runs and then on each CPU
    it may use in turn, pinned there, every ``every_s`` seconds, until one runs at the host's full
    speed: within :data:`FULL_SPEED` of ``fastest_ms`` (the host's full speed as another process
    knows it: a worker is told the judge's), or, without it, :func:`at_full_speed`. Leaves the
    thread pinned to that CPU; after ``max_s`` (default :data:`WAIT_S`), back on its CPUs as they
    were. Returns (seconds it took, the CPU, the thread's CPUs before; the last two None where it
    ran at full speed where it was: not moved), or (None, None, None) where no CPU did in time or
    the full speed is unknown (this process has taken too few probes and none was given: nothing
    probed). Where threads cannot be pinned it probes where it runs. The caller gives the thread
    its CPUs back (:func:`back_to`) when its timed calls are over.

    On a virtual machine each virtual CPU's speed flips on its own: one CPU may run at full speed
    most of the time and another almost never, and at the same moment two workers on two CPUs can
    probe nearly 2x apart. So the thread moves to a CPU that is fast now: waiting on its own CPU
    for it to speed up can wait in vain, and kept fewer of the eager control's timings within its
    band (results/README.md)."""
    if fastest_ms is None and _SEEN["n"] < SEEN_ENOUGH:
        return None, None, None
    max_s = WAIT_S if max_s is None else max_s
    t0 = _monotonic()
    before = None
    try:
        before = _thread_cpus()
        while True:
            for cpu in [None, *sorted(before or ())]:  # first where it runs (not moved), then each CPU in turn
                _pin(cpu)
                if _fast(sample(), fastest_ms):
                    return round(_monotonic() - t0, 3), cpu, before if cpu is not None else None
            back_to(before)
            if _monotonic() - t0 >= max_s:
                return None, None, None
            _sleep(every_s)
    except OSError:  # a CPU taken away meanwhile: as it was
        back_to(before)
        return None, None, None


def _thread_cpus() -> set | None:
    """The CPUs the calling thread may use, None where threads cannot be pinned here."""
    return set(_getaffinity(0)) if _getaffinity is not None and _setaffinity is not None else None


def _pin(cpu: int | None) -> None:
    """The calling thread pinned to ``cpu`` (None: left where it is)."""
    if cpu is not None:
        _setaffinity(0, {cpu})


def back_to(cpus: set | None) -> None:
    """The calling thread back on ``cpus`` (:func:`to_a_fast_cpu`'s third value; None: nothing)."""
    if cpus and _setaffinity is not None:
        try:
            _setaffinity(0, cpus)
        except OSError:
            pass


def _fast(ms: float, fastest_ms: float | None) -> bool:
    return at_full_speed(ms) if fastest_ms is None else ms <= FULL_SPEED * fastest_ms


def speed_ratio(candidate_probe_ms: float | None, baseline_probe_ms: float | None) -> float | None:
    """How much slower the host ran while the baseline was timed than while the candidate was
    (``baseline / candidate`` probe time: above 1, the baseline's host was slower, which favours
    a host-bound candidate's speedup). None where either side has no probe."""
    if not candidate_probe_ms or not baseline_probe_ms:
        return None
    return baseline_probe_ms / candidate_probe_ms


__all__ = ["DRIFT_SLACK", "FULL_SPEED", "HALF_PROBES", "PROBE_EVERY_S", "PROBE_LOOPS", "SEEN_ENOUGH", "HostProbes", "at_full_speed",
           "back_to", "drift_follows_host", "full_speed_ms", "learn_full_speed", "probe_ms", "sample", "speed_ratio", "to_a_fast_cpu"]
