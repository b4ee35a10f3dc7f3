"""Timing one callable, one concern per function (docs/JUDGING.md "Timing").

CUDA: per trial, the L2 cache is flushed by reading a buffer twice its size (``L2Flusher``), the device is
synchronised, a start event is recorded, the call runs on the next input set of a rotation, an end
event is recorded on the current stream, the whole device is synchronised (every stream, threats
#10-#12) and a second end event is recorded. ``end - start`` is the device time of the call on its
stream; ``end_after_sync - end`` beyond the idle gap measured on a no-op shows work that outlived the
call on another stream (unjoined side-stream work, threat #11): such a call is timed up to the
device-wide sync instead and reported.

Head start (``head_start.py``): after the sync and before the start event, a kernel that fills
every SM spins, so the call is issued while the GPU is still busy, as in a program that keeps its
GPU fed. Without it the end-to-end time of every call would include the host's path to its first
kernel (typically 10-20 us). No work of the call can run beside the spin, on any stream. How long
it spins is taken from a ladder (``HEAD_START_LADDER`` times ``HEAD_START_US``) after the warm-up:
the shortest step at least ``ISSUE_MARGIN`` times the host's issue time (spin launch to the call's
return; 90th percentile of the settled warm-up calls). The spin is chosen, not fixed, because host
issue times differ widely: a Triton launch can take 50-75 us of host time, so a fixed 40 us would
leave the rest inside every call's end-to-end time.

The first call on each input set, whose host path follows the set's draw with cold caches, is issued
behind a *gate* instead (``head_start.Gate``): the same device-filling kernel, held until the host
has issued the whole call (at most ``head_start.GATE_CAP_US``), so no spin length is guessed for it
(``FIRST_CALL_STEPS`` steps longer than the others' spin where the driver cannot load a gate). First
calls vary far more than settled ones (an honest torch.compile candidate can issue settled calls in
150-330 us and first calls in up to 1,150 us); a first call that outruns its spin carries host time
that its repeats do not, and an honest kernel then reads as fast only on data it has seen (a false
memoisation flag). A longer fixed spin for first calls does not cure this: a first call can still
outrun it, and more first calls read long without being late (timed to the device-wide sync).
``Timing.first_round_late`` counts the first calls on a set issued later than their spin.
Behind the gate the judge's own host can still wake late: a first call whose event after the
device-wide sync is late is judged again against an idle gap taken right after it
(:meth:`_FlushedCalls.first_gap_rechecked`), and the memoisation check reads the fastest first call
(``Timing.first_round_fastest_ms``): on a loaded host, late wake-ups can slow a third of an honest
call's first calls, while a memoiser is slow on every one (benchmarks/first_round_wakeups.py).
``Timing.head_start_us`` says which step was used (0: none, e.g. no driver support) and
``Timing.late_issues`` how many timed calls still took longer to issue than their spin (host time
inside their time). The garbage collector is off during the timed trials (as ``timeit`` does): a
collection inside a call is host time the call did not cause.

Two clocks on CUDA, both recorded: the *end-to-end* time above (what a user's program pays, launch
overhead and gaps included; speedups use it) and the *device-busy* time: the sum of the durations
of every kernel, copy and fill the call put on any stream, read from CUPTI through torch.profiler
over a separate pass of profiled calls (same flush, same rotation; :mod:`.device_clock`). Launch-bound
calls show as end-to-end well above device-busy (:func:`.timing_summary.host_bound`). Work left on
another stream is told by the gap behind a device-wide sync (:mod:`.unjoined`).

Here: the calls themselves (:class:`_FlushedCalls`: flush, head start, events, the gap check) and
:func:`time_cuda` / :func:`time_cpu`, which put them in order. The warm-up, the timed runs and
their stopping rule are :mod:`.trials`'.

Outlier runs are re-measured, not reported: warm-up continues until the call's own time has
settled (a GPU coming out of an idle clock state runs several times slower for a while), and a
timed run whose first and second halves disagree by more than :data:`.timing_summary.DRIFT` is discarded and run
again (CUDA: at most :data:`.trials.MAX_REMEASURE` times; ``Timing.remeasured`` says how often), unless the
host-speed probes of its halves say the drift followed the host's speed (kept: ``Timing.host_drift``), or
another run would end past the timing's span (:data:`.trials.MAX_SPAN` budgets: ``Timing.span_cut``).

CPU: a monotonic nanosecond clock around each call, with the same rotation.

Trials continue until at least ``min_trials`` ran and either the relative standard error of the
median estimate is under ``target_rse`` or ``budget_s`` is spent (never beyond ``max_trials``).

The functions this module calls are bound at import time: the worker imports it before any
candidate code runs and checks the bindings are unchanged afterwards (threat #14).
"""
from __future__ import annotations

import ctypes
import functools
import gc
import statistics
import time

import torch
from torch.profiler import profile as _profile
from torch.profiler import record_function as _record_function

from . import profiling as _profiling
from .device_clock import device_busy_ms, device_clock_calls
from .head_start import HEAD_START_LADDER, Gate, HeadStart, HeadStartError
from .head_start import for_device as _head_start_for
from .head_start import gate_for_device as _gate_for
from .host_speed import FULL_SPEED as _FULL_SPEED
from .host_speed import HostProbes
from .host_speed import back_to as _back_to
from .host_speed import to_a_fast_cpu as _to_a_fast_cpu
from .timing_summary import Timing, _q
from .trials import BUDGET_S, MAX_SPAN, _runs, _warm_up, past_span
from .unjoined import _idle_gaps, _recheck_unjoined, gap_floor, unjoined_suspected

_perf_counter_ns = time.perf_counter_ns
_monotonic = time.monotonic
_Event = torch.cuda.Event
_elapsed_time = torch.cuda.Event.elapsed_time
_record = torch.cuda.Event.record
_synchronize = torch.cuda.synchronize
_gc_disable, _gc_enable, _gc_isenabled = gc.disable, gc.enable, gc.isenabled
_on_device = _profiling.on_device

BOUND = {
    "time.perf_counter_ns": (time, "perf_counter_ns", _perf_counter_ns),
    "time.monotonic": (time, "monotonic", _monotonic),
    "torch.cuda.Event": (torch.cuda, "Event", _Event),
    "torch.cuda.Event.elapsed_time": (torch.cuda.Event, "elapsed_time", _elapsed_time),
    "torch.cuda.Event.record": (torch.cuda.Event, "record", _record),
    "torch.cuda.synchronize": (torch.cuda, "synchronize", _synchronize),
    "torch.profiler.profile": (torch.profiler, "profile", _profile),
    "torch.profiler.record_function": (torch.profiler, "record_function", _record_function),
    "HeadStart.__call__": (HeadStart, "__call__", HeadStart.__call__),
    "HeadStart.release": (HeadStart, "release", HeadStart.release),
    "Gate.__call__": (Gate, "__call__", Gate.__call__),
    "Gate.release": (Gate, "release", Gate.release),
    "kbench_lib.measure.profiling.on_device": (_profiling, "on_device", _on_device),
}
_HEAD_STARTS: dict[int, tuple[HeadStart | None, tuple]] = {}  # device index -> (head start, its state when built)
_LONGER: dict[int, list[tuple[HeadStart, tuple]]] = {}  # device index -> the ladder's longer steps, likewise
_GATES: dict[int, tuple[Gate | None, tuple]] = {}  # device index -> the first calls' gate, likewise
ISSUE_MARGIN = 1.5  # a spin at least this many times the host's issue time (p90 of settled warm-up calls)
FIRST_CALL_STEPS = 2  # the first call on each set spins this many ladder steps longer (cold host path)
REWARM_AFTER_S = 0.05  # a search for a fast CPU longer than this is followed by a second warm-up (the GPU may have left its clocks)
HOST_UNCOVERED_SHARE = 0.2  # calls whose host issue outlasts their spin by this share of their time run on a CPU at full speed

TRACE_MAX = 4000  # timed calls a trace keeps


def _head_start_state(hs: HeadStart | None) -> tuple:
    return () if hs is None else (hs._launch, hs._func.value, hs.blocks, hs._ns.value, hs.fills_device, hs._args[0])


def _gate_state(g: Gate | None) -> tuple:
    return () if g is None else (g._launch, g._func.value, g.blocks, g._cap.value, g.fills_device, tuple(g._args),
                                 g._host_dev.value, g._dev.value, ctypes.addressof(g._flag), g.us)


def tampered_bindings() -> list[str]:
    """Names of timing functions that no longer are what this module bound at import (and head
    starts whose launch state changed since ``prepare`` built them)."""
    bad = [name for name, (owner, attr, fn) in BOUND.items() if getattr(owner, attr, None) is not fn]
    for index, (hs, state) in list(_HEAD_STARTS.items()):
        if _head_start_state(hs) != state:
            bad.append(f"head start on cuda:{index}")
    for index, steps in list(_LONGER.items()):
        if any(_head_start_state(hs) != state for hs, state in steps):
            bad.append(f"head start ladder on cuda:{index}")
    for index, (g, state) in list(_GATES.items()):
        if _gate_state(g) != state:
            bad.append(f"first-call gate on cuda:{index}")
    return bad


def prepare(device: torch.device) -> HeadStart | None:
    """Builds (once per device) the end-to-end clock's head start; the worker calls this before any
    candidate code is imported. None when the driver cannot load it or it cannot fill the device."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _HEAD_STARTS:
        try:
            hs = _head_start_for(torch.device("cuda", index))
            hs = hs if hs.fills_device else None
        except (HeadStartError, OSError, AttributeError):
            hs = None
        _HEAD_STARTS[index] = (hs, _head_start_state(hs))
        longer = []
        if hs is not None:
            try:
                longer = [HeadStart(hs.sm_count, hs.max_threads_per_sm, us=hs.us * k) for k in HEAD_START_LADDER[1:]]
            except (HeadStartError, OSError, AttributeError):
                longer = []
        _LONGER[index] = [(h, _head_start_state(h)) for h in longer]
        gate = None
        if hs is not None:
            try:
                gate = _gate_for(torch.device("cuda", index))
                gate = gate if gate.fills_device else None
            except (HeadStartError, OSError, AttributeError):
                gate = None
        _GATES[index] = (gate, _gate_state(gate))
    return _HEAD_STARTS[index][0]


def first_call_gate(device: torch.device) -> Gate | None:
    """The device's gate for first calls (built by ``prepare``); None without one."""
    prepare(device)
    index = device.index if device.index is not None else torch.cuda.current_device()
    return _GATES[index][0]


def ladder(device: torch.device) -> list[HeadStart]:
    """The device's head starts, shortest first (built by ``prepare``); empty without one."""
    base = prepare(device)
    if base is None:
        return []
    index = device.index if device.index is not None else torch.cuda.current_device()
    return [base, *(h for h, _ in _LONGER.get(index, []))]


def choose_spins(steps: list, issue_us: list[float]) -> tuple:
    """(spin for every timed call, spin for the first call on a set) from the ladder ``steps``
    (shortest first) and the host's issue times of settled warm-up calls: the shortest step at
    least ``ISSUE_MARGIN`` times their 90th percentile, and ``FIRST_CALL_STEPS`` steps longer."""
    if not steps:
        return None, None
    p90 = _q(sorted(issue_us), 0.9) if issue_us else 0.0
    i = next((k for k, h in enumerate(steps) if h.us >= ISSUE_MARGIN * p90), len(steps) - 1)
    return steps[i], steps[min(i + FIRST_CALL_STEPS, len(steps) - 1)]


class L2Flusher:
    """Reads a buffer twice the size of the L2 cache, so every trial starts with a cold cache.

    Reading, not writing: a write-based flush (``buf.zero_()``, as triton's do_bench and upstream
    KernelBench do) leaves the L2 full of dirty lines, which the timed kernel then pays to write
    back as it evicts them. Clean lines cost nothing to evict, and dirty lines the previous call
    left are written back here, outside the timed window; this is closest to ncu's own flush,
    which invalidates the cache."""

    def __init__(self, device: torch.device):
        props = torch.cuda.get_device_properties(device)
        size = max(int(getattr(props, "L2_cache_size", 0) or 0), 8 << 20) * 2
        self.buf = torch.zeros(size // 4, dtype=torch.float32, device=device)
        self._sum = torch.zeros((), dtype=torch.float32, device=device)

    def __call__(self) -> None:
        torch.sum(self.buf, dim=0, out=self._sum)


class _FlushedCalls:
    """The end-to-end clock's calls on one device: each flushed, synchronised, issued behind the
    head start (or the first-call gate) and timed between events on the calling stream, with the
    device-wide sync after it telling work that outlived the call (module docstring). Holds what
    the timed run reports of them: host issue times, stream times, late issues, first calls."""

    def __init__(self, fn, device: torch.device, flush_l2: bool, head_start: bool):
        t0 = _monotonic()
        self.fn, self.device = fn, device
        self.flusher = L2Flusher(device) if flush_l2 else None
        t_flush = _monotonic()
        self.steps = ladder(device) if head_start else []
        self.gate = first_call_gate(device) if self.steps else None
        t_ladder = _monotonic()
        self.spins = {"every": self.steps[0] if self.steps else None, "first": self.steps[0] if self.steps else None}
        self.floors = {"every": gap_floor(device, spin=self.spins["every"])}
        self.floors["first"] = self.floors["every"]
        self.issue_us: list[float] = []  # host time from the spin's launch to the call's return, per call
        self.stream_times: list[float] = []  # start -> end on the calling stream of every timed call (no host wake-up in it)
        self.raw = 0.0  # the last call's start -> end on the calling stream
        self.gap = 0.0  # ... and its end -> the event after the device-wide sync
        self.first_excused = 0  # first calls whose late gap an idle gap right after them explained (first_gap_rechecked)
        self.late = 0
        self.firsts: list[tuple[float, float]] = []  # (host issue us, spin us) of each first call on a set
        self.traced: list[list] = []  # trace: the timed calls (every run)
        self.called: set[int] = set()
        self.probes = HostProbes()  # the host's speed over the timed calls (host_speed), between them
        self.warm_ms: list[float] = []  # the warm-up calls' times
        self.cpus_before: set | None = None  # the calling thread's CPUs while it is pinned to a fast one (move_to_a_fast_cpu)
        self.cpu: int | None = None  # ... and that one
        t1 = _monotonic()
        self.phase_s = {"setup": round(t1 - t0, 4), "setup.flush": round(t_flush - t0, 4),
                        "setup.head_start": round(t_ladder - t_flush, 4), "setup.floor": round(t1 - t_ladder, 4)}

    def one(self, args, first: bool = False):
        """(ms, 1 if work outlived the call on another stream else 0, output) of one flushed call."""
        device, fn = self.device, self.fn  # bound before the window: nothing but the call inside it
        if self.flusher is not None:
            self.flusher()
        start, end, end_sync = _Event(enable_timing=True), _Event(enable_timing=True), _Event(enable_timing=True)
        _synchronize(device)
        kind = "first" if first else "every"
        spin, floor = self.spins[kind], self.floors[kind]
        t_issue = _perf_counter_ns()
        if spin is not None:
            spin(torch.cuda.current_stream(device).cuda_stream)
        _record(start)
        out = fn(*args)
        _record(end)
        issued = (_perf_counter_ns() - t_issue) / 1e3
        if spin is not None:
            spin.release()
        self.issue_us.append(issued)
        if spin is not None and issued > spin.us:
            self.late += 1
        _synchronize(device)
        _record(end_sync)
        _synchronize(device)
        t = _elapsed_time(start, end)
        gap = _elapsed_time(end, end_sync)
        self.raw, self.gap = t, gap
        if gap > floor.high_ms + max(0.02, 0.1 * t):
            return _elapsed_time(start, end_sync) - floor.median_ms, 1, out
        return t, 0, out

    def first_gap_rechecked(self, t: float, spin) -> tuple[float, int]:
        """A first call on a set whose gap behind the device-wide sync counted it as unjoined,
        judged again against an idle gap taken right after it behind the same gate: a gap the host's
        wake-up from the sync explains at that moment (a slow spell of its CPU: the idle gap is as
        late) is not work left on another stream, and the call is timed on its stream
        (``Timing.first_round_excused`` counts them). Work left on another stream outlasts the idle
        gap by itself and stays timed to the sync, against the same margin as every call. Only
        first calls: each weighs a fifth of the first round that the memoisation check reads
        (a late wake-up on three of five read as an honest kernel being fast only on seen data),
        where a repeat's late wake-up is one of hundreds."""
        floor = self.floors["first"]
        idle = _idle_gaps(self.device, 1, spin)[0]
        if self.gap > max(idle - floor.median_ms, 0.0) + floor.high_ms + max(0.02, 0.1 * self.raw):
            return t, 1
        self.first_excused += 1
        return self.raw, 0

    def clock(self, args):
        """A warm-up call: (ms, output)."""
        t, _, out = self.one(args)
        self.warm_ms.append(t)
        return t, out

    def host_time_matters(self) -> bool:
        """Whether the timed calls' time will hold host time (after :meth:`choose_spins`): the
        settled warm-up calls (their second half) took longer to issue on the host than the spin
        chosen for every call covers, by at least :data:`HOST_UNCOVERED_SHARE` of their time. Such
        a call's time follows the host's speed (:mod:`.host_speed`); one whose issue the spin covers
        does not."""
        n = len(self.warm_ms)
        if n < 2:
            return False
        spin = self.spins["every"]
        uncovered_ms = (statistics.median(self.issue_us[n // 2:n]) - (spin.us if spin is not None else 0.0)) / 1e3
        return uncovered_ms >= HOST_UNCOVERED_SHARE * statistics.median(self.warm_ms[n // 2:])

    def move_to_a_fast_cpu(self, full_speed_ms: float | None) -> tuple[float | None, int]:
        """Before the timed runs of calls whose time follows the host's speed: the calling thread
        moved to a CPU whose probe runs within :data:`.host_speed.FULL_SPEED` of ``full_speed_ms``,
        the host's full speed as the judge knows it (:func:`.host_speed.to_a_fast_cpu`, at most
        :data:`.host_speed.WAIT_S`), so that the baseline and the candidate start their runs on the
        host at its usual best; :meth:`release` gives the thread its CPUs back. Returns (seconds it
        took, None where none was asked; 1 where a CPU ran at full speed, else 0)."""
        if not full_speed_ms or not self.host_time_matters():
            return None, 0
        t0 = _monotonic()
        took, self.cpu, self.cpus_before = _to_a_fast_cpu(fastest_ms=full_speed_ms)
        return round(_monotonic() - t0, 3), int(took is not None)

    def release(self) -> None:
        """The calling thread back on the CPUs it had before :meth:`move_to_a_fast_cpu` moved it."""
        _back_to(self.cpus_before)
        self.cpus_before = None

    def choose_spins(self) -> None:
        """After the warm-up: the spin of every call from the settled host issue times, the gate (or
        a longer step) for first calls on a set, and the idle-gap floors behind each."""
        if self.steps:
            self.spins["every"], self.spins["first"] = choose_spins(self.steps, self.issue_us[len(self.issue_us) // 2:])
            self.spins["first"] = self.gate or self.spins["first"]
            self.floors["every"] = gap_floor(self.device, spin=self.spins["every"])
            self.floors["first"] = gap_floor(self.device, trials=20, spin=self.spins["first"])
        self.late = 0

    def trial(self, input_sets: list, trace: bool, i: int):
        """One timed call on set ``i``. ``input_sets[i]`` is evaluated before the clock starts: a set
        drawn on first use (:class:`kbench_lib.isolation.worker.drawing._TimedDraws`) is drawn off
        the clock; the first call on a set follows its draw, with the host's caches cold, and gets
        the gate."""
        args = input_sets[i]
        first = i not in self.called
        self.called.add(i)
        t, gap, out = self.one(args, first)
        spin = self.spins["first" if first else "every"]
        if first and gap:
            t, gap = self.first_gap_rechecked(t, spin)
        self.stream_times.append(self.raw)
        spin_us = spin.us if spin is not None else 0.0
        if first:
            self.firsts.append((self.issue_us[-1], spin_us))
        if trace and len(self.traced) < TRACE_MAX:
            self.traced.append([round(t, 5), round(self.issue_us[-1], 1), spin_us, first, gap])
        # never inside the first round (a probe delays the next call); after the call's window and its sync
        self.probes.after_call(may_probe=len(self.called) >= len(input_sets))
        return t, gap, out

    def recheck(self, result: Timing, input_sets: list) -> None:
        """The unjoined re-check (:mod:`.unjoined`) behind freshly measured floors: host wake-ups drift."""
        timed_late = self.late
        if self.steps:
            self.floors["every"] = gap_floor(self.device, spin=self.spins["every"])
        result.unjoined_recheck, result.recheck_calls = _recheck_unjoined(self.one, input_sets)
        self.late = timed_late

    def report(self, result: Timing, trace: bool) -> None:
        """What the timed calls add to ``result``: the stream clock, the first round's issue, the
        head start used and the late issues."""
        if self.stream_times:
            result.stream_ms = statistics.median(self.stream_times)
        if self.firsts:
            result.first_round_late = sum(1 for issued, spin in self.firsts if spin and issued > spin)
            result.first_round_issue_us = round(statistics.median(i for i, _ in self.firsts), 1)
        if trace:
            result.trace = self.traced
        result.head_start_us = self.spins["every"].us if self.spins["every"] is not None else 0.0
        result.late_issues = self.late
        result.first_round_excused = self.first_excused
        result.host_probe_ms, result.host_probes = self.probes.median_ms(), len(self.probes.samples)


def time_cuda(
    fn,
    input_sets: list,
    *,
    warmup_ms: float = 25.0,
    min_trials: int = 100,
    max_trials: int = 2000,
    budget_s: float = BUDGET_S,
    target_rse: float = 0.005,
    flush_l2: bool = True,
    after_call=None,
    warmup_sets: list | None = None,
    device_clock: bool = True,
    device_calls: int | None = None,
    head_start: bool = True,
    on_trials=None,
    trace: bool = False,
    one_thread: bool = False,
    full_speed_ms: float | None = None,
) -> Timing:
    """Time ``fn(*inputs)`` on CUDA, rotating over ``input_sets`` (see module docstring).

    ``after_call(index, set_index, output)`` is called outside the timed window (used to keep a
    sample of timed outputs for re-checking; every run, ``index`` from 0 again in a run measured
    anew). Warm-up runs on ``warmup_sets`` when
    given, so the first timed call on each input set is the first call that sees its data.
    ``device_clock`` adds the device-busy clock over ``device_calls`` profiled calls afterwards
    (default: :func:`.device_clock.device_clock_calls`).
    ``head_start`` issues each call behind the device-filling spin (module docstring).
    ``on_trials()`` is called once the warm-up is over, before the first timed call.
    ``trace`` keeps the timed calls (every run, the first ``TRACE_MAX``) as ``[ms, host issue us,
    spin us, first call on its set, 1 if timed to the device-wide sync (unjoined)]`` in
    ``result.trace`` (a diagnostic of the timing itself). ``one_thread``: the device
    clock's profiler session on the process's profiler thread (:func:`.device_clock.device_busy_ms`).
    ``full_speed_ms``: the host-speed probe's time at the host's full speed (the judge's fastest,
    :func:`.host_speed.learn_full_speed`); where given and the calls hold host time
    (:meth:`_FlushedCalls.host_time_matters`), the timed calls run on a CPU probing within
    :data:`.host_speed.FULL_SPEED` of it, found before them (at most :data:`.host_speed.WAIT_S`;
    ``Timing.host_wait_s``, ``host_wait_reached``, ``host_moved``), the thread back on its CPUs after;
    a run whose probes say that CPU slowed is run once more on one found at full speed again
    (:func:`_again_on_a_fast_cpu`, ``Timing.host_retried``). The runs, re-measurements and that run
    again included, end within :data:`.trials.MAX_SPAN` budgets of the first run's start: one that
    would end later is not begun (``Timing.span_cut``)."""
    calls = _FlushedCalls(fn, torch.device("cuda", torch.cuda.current_device()), flush_l2, head_start)
    t1 = _monotonic()
    gc_was = _gc_isenabled()
    _gc_disable()  # no collection inside a timed call (timeit does the same)
    try:
        warmup_calls, host_wait = _warm_up_on_a_fast_cpu(calls, fn, warmup_sets or input_sets, len(input_sets), warmup_ms,
                                                         full_speed_ms)
        if on_trials is not None:  # the warm-up is over: the timed sets may be drawn now
            on_trials()
        t2 = _monotonic()
        deadline = t2 + MAX_SPAN * budget_s
        run = functools.partial(_runs, functools.partial(calls.trial, input_sets, trace), len(input_sets), after_call=after_call,
                                min_trials=min_trials, max_trials=max_trials, budget_s=budget_s, target_rse=target_rse,
                                probes=calls.probes, deadline=deadline)
        result = run(first_round=bool(warmup_sets))
        if host_wait[1] and _slow(calls.probes.median_ms(), full_speed_ms):  # fast when it began, slow since
            result, host_wait = _again_within_span(calls, run, result, full_speed_ms, host_wait, fn, warmup_sets or input_sets,
                                                   len(input_sets), warmup_ms, t2, deadline)
            warmup_calls += result.warmup_calls
        if unjoined_suspected(result.unjoined_trials, result.n_trials):
            calls.recheck(result, input_sets)
    finally:
        calls.release()
        if gc_was:
            _gc_enable()
    t3 = _monotonic()
    if device_calls is None:
        device_calls = device_clock_calls(result.median_ms)
    if device_clock and device_calls > 0:
        result.device_ms, result.device_calls, result.device_union_ms = device_busy_ms(fn, input_sets, device_calls, calls.flusher,
                                                                                       one_thread)
    calls.report(result, trace)
    result.host_wait_s, result.host_wait_reached, result.host_moved = *host_wait, int(calls.cpu is not None)
    result.warmup_calls = warmup_calls
    result.phase_s = {**calls.phase_s, "warmup": round(t2 - t1, 4), "trials": round(t3 - t2, 4),
                      "device_clock": round(_monotonic() - t3, 4)}
    return result


def _again_within_span(calls: _FlushedCalls, run, result: Timing, full_speed_ms: float, host_wait: tuple, fn, warm_sets: list,
                       n_timed_sets: int, warmup_ms: float, started: float, deadline: float) -> tuple[Timing, tuple]:
    """``result``'s runs (begun at ``started``) run once more on a CPU at full speed
    (:func:`_again_on_a_fast_cpu`), where a run as long as one of them ends before ``deadline``;
    else ``result`` stands with ``span_cut`` set. The result's ``warmup_calls`` are the new
    warm-up's alone (0 where no run was begun)."""
    if past_span(started, 1 + result.remeasured, deadline):
        result.span_cut = 1
        return result, host_wait
    again, host_wait = _again_on_a_fast_cpu(calls, run, result, full_speed_ms, host_wait, fn, warm_sets, n_timed_sets, warmup_ms)
    return (again, host_wait) if again is not None else (result, host_wait)


def _warm_up_on_a_fast_cpu(calls: _FlushedCalls, fn, warm_sets: list, n_timed_sets: int, warmup_ms: float,
                           full_speed_ms: float | None) -> tuple[int, tuple]:
    """The warm-up before the first timed run: ``calls`` warmed up on ``warm_sets``, their spins
    chosen, the thread moved to a CPU at full speed where their time follows the host's
    (:meth:`_FlushedCalls.move_to_a_fast_cpu`), and warmed up again there, or wherever that search
    outlasted ``REWARM_AFTER_S`` (on another CPU the caches are cold; while the host was waited for,
    the GPU may have idled out of its clocks). Returns (warm-up calls, the search's (seconds, whether
    it found one))."""
    warmup_calls = _warm_up(fn, warm_sets, n_timed_sets, warmup_ms, clock=calls.clock)
    calls.choose_spins()
    host_wait = calls.move_to_a_fast_cpu(full_speed_ms)
    if calls.cpu is not None or (host_wait[0] or 0.0) > REWARM_AFTER_S:
        warmup_calls += _warm_up(fn, warm_sets, n_timed_sets, warmup_ms, clock=calls.clock)
        calls.choose_spins()
    return warmup_calls, host_wait


def _slow(run_probe_ms: float | None, full_speed_ms: float) -> bool:
    """Whether a run's probes' median is past :data:`.host_speed.FULL_SPEED` of ``full_speed_ms``
    (False for a run too short to be probed: nothing says its host was slow)."""
    return run_probe_ms is not None and run_probe_ms > _FULL_SPEED * full_speed_ms


def _again_on_a_fast_cpu(calls: _FlushedCalls, run, first: Timing, full_speed_ms: float, host_wait: tuple, fn, warm_sets: list,
                         n_timed_sets: int, warmup_ms: float) -> tuple[Timing | None, tuple]:
    """A run of calls whose time follows the host's speed, whose probes say the host ran slow
    (its CPU slowed after :meth:`_FlushedCalls.move_to_a_fast_cpu` found it fast), run once more on
    a CPU found at full speed, warmed up there again; the run reported is that one, whose outputs
    are the ones sampled (``first``'s first round and its re-measure count are carried over).
    Only where the search before the first run had found one (one that found none has met a host
    slow everywhere, and would wait as long again). Returns (that run with ``host_retried`` 1, the
    search's seconds added to ``host_wait`` and whether it found one), or (None, ``host_wait``
    so updated) where no CPU ran at full speed within :data:`.host_speed.WAIT_S`: ``first``
    stands. The baseline and the candidate alike. A CPU found at full speed can slow again during
    the run, and a host-bound call's time follows it: without this, the two sides of a speedup can
    be timed at host speeds up to 1.8x apart (the eager control in results/README.md)."""
    calls.release()
    searched, reached = calls.move_to_a_fast_cpu(full_speed_ms)
    host_wait = (round((host_wait[0] or 0.0) + (searched or 0.0), 3), reached)
    if not reached:
        return None, host_wait
    warmups = _warm_up(fn, warm_sets, n_timed_sets, warmup_ms, clock=calls.clock)
    calls.choose_spins()
    again = run(first_round=False)
    again.first_round_ms, again.first_round_fastest_ms = first.first_round_ms, first.first_round_fastest_ms
    again.remeasured += first.remeasured
    again.host_retried, again.warmup_calls = 1, warmups
    return again, host_wait


def time_cpu(
    fn,
    input_sets: list,
    *,
    warmup_ms: float = 25.0,
    min_trials: int = 100,
    max_trials: int = 2000,
    budget_s: float = 5.0,
    target_rse: float = 0.005,
    after_call=None,
    warmup_sets: list | None = None,
    max_remeasure: int = 0,
    on_trials=None,
) -> Timing:
    """Time ``fn(*inputs)`` on the CPU with a monotonic clock, rotating over ``input_sets``.

    Drifting runs are not re-measured by default here: CPU timings exist to keep the pipeline
    testable on machines without a GPU, where a shared, noisy CPU would re-measure most runs."""
    t0 = _monotonic()
    warmup_calls = _warm_up(fn, warmup_sets or input_sets, len(input_sets), warmup_ms)
    if on_trials is not None:
        on_trials()
    t1 = _monotonic()

    def trial(set_index):
        args = input_sets[set_index]  # a set drawn on first use is drawn here, off the clock
        t0 = _perf_counter_ns()
        out = fn(*args)
        t1 = _perf_counter_ns()
        return (t1 - t0) / 1e6, 0, out

    result = _runs(trial, len(input_sets), bool(warmup_sets), after_call, min_trials, max_trials, budget_s, target_rse,
                   max_remeasure)
    result.warmup_calls = warmup_calls
    result.phase_s = {"warmup": round(t1 - t0, 4), "trials": round(_monotonic() - t1, 4)}
    return result


def time_callable(fn, input_sets: list, device: str, **kw) -> Timing:
    if device.startswith("cuda"):
        return time_cuda(fn, input_sets, **kw)
    for key in ("flush_l2", "device_clock", "device_calls", "head_start", "trace", "one_thread", "full_speed_ms"):
        kw.pop(key, None)
    return time_cpu(fn, input_sets, **kw)
