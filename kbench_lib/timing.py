"""Timing one callable, one concern per function (DESIGN.md "Timing").

CUDA: per trial, the L2 cache is flushed by writing a buffer twice its size, the device is
synchronised, a start event is recorded, the call runs on the next input set of a rotation, an end
event is recorded on the current stream, the whole device is synchronised (every stream, THREATS
#10-#12) and a second end event is recorded. ``end - start`` is the device time of the call on its
stream; ``end_after_sync - end`` beyond the idle gap measured on a no-op shows work that outlived the
call on another stream (unjoined side-stream work, THREATS #11): such a call is timed up to the
device-wide sync instead and reported.

CPU: a monotonic nanosecond clock around each call, with the same rotation.

Trials continue until at least ``min_trials`` ran and either the relative standard error of the
median estimate is under ``target_rse`` or ``budget_s`` is spent (never beyond ``max_trials``).

The functions this module calls are bound at import time: the worker imports it before any
candidate code runs and checks the bindings are unchanged afterwards (THREATS #14).
"""
from __future__ import annotations

import collections

import math
import statistics
import time
from dataclasses import asdict, dataclass

import torch

_perf_counter_ns = time.perf_counter_ns
_monotonic = time.monotonic
_Event = torch.cuda.Event
_elapsed_time = torch.cuda.Event.elapsed_time
_record = torch.cuda.Event.record
_synchronize = torch.cuda.synchronize

BOUND = {
    "time.perf_counter_ns": (time, "perf_counter_ns", _perf_counter_ns),
    "time.monotonic": (time, "monotonic", _monotonic),
    "torch.cuda.Event": (torch.cuda, "Event", _Event),
    "torch.cuda.Event.elapsed_time": (torch.cuda.Event, "elapsed_time", _elapsed_time),
    "torch.cuda.Event.record": (torch.cuda.Event, "record", _record),
    "torch.cuda.synchronize": (torch.cuda, "synchronize", _synchronize),
}


def tampered_bindings() -> list[str]:
    """Names of timing functions that no longer are what this module bound at import."""
    return [name for name, (owner, attr, fn) in BOUND.items() if getattr(owner, attr, None) is not fn]


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

    def as_dict(self) -> dict:
        return asdict(self)


def summarize(samples_ms: list[float], unjoined: int = 0, n_sets: int = 0) -> Timing:
    s = sorted(samples_ms)
    n = len(s)
    med = statistics.median(s)
    mean = statistics.fmean(s)
    std = statistics.pstdev(s) if n > 1 else 0.0

    def q(p: float) -> float:
        return s[min(n - 1, max(0, int(round(p * (n - 1)))))]

    # standard error of the median ~ 1.2533 * sigma / sqrt(n), sigma estimated robustly from the IQR
    sigma = (q(0.75) - q(0.25)) / 1.349 if n >= 4 else std
    rse = (1.2533 * sigma / math.sqrt(n)) / med if med > 0 else 0.0
    first = statistics.median(samples_ms[:n_sets]) if n_sets and n > n_sets else None
    return Timing(med, mean, std, q(0.10), q(0.90), s[0], n, rse, unjoined, first)


def _done(samples: list[float], started: float, min_trials: int, max_trials: int, budget_s: float, target_rse: float) -> bool:
    n = len(samples)
    if n >= max_trials:
        return True
    if n < min_trials:
        return False
    if _monotonic() - started > budget_s:
        return True
    return summarize(samples).rse < target_rse


class L2Flusher:
    """Writes a buffer twice the size of the L2 cache, so every trial starts with a cold cache."""

    def __init__(self, device: torch.device):
        props = torch.cuda.get_device_properties(device)
        size = max(int(getattr(props, "L2_cache_size", 0) or 0), 8 << 20) * 2
        self.buf = torch.empty(size, dtype=torch.int8, device=device)

    def __call__(self) -> None:
        self.buf.zero_()


def idle_gap_ms(device: torch.device, trials: int = 50) -> float:
    """Median gap between an event recorded at the end of a call and one recorded after a
    device-wide sync, when nothing else is running: the floor that unjoined work is judged over."""
    gaps = []
    for _ in range(trials):
        a, b = _Event(enable_timing=True), _Event(enable_timing=True)
        _record(a)
        _synchronize(device)
        _record(b)
        _synchronize(device)
        gaps.append(_elapsed_time(a, b))
    return statistics.median(gaps)


def _warm_up(fn, warm: list, n_timed_sets: int, warmup_ms: float, sync) -> None:
    """Calls ``fn`` until ``warmup_ms`` have passed, at least once per warm-up set and at least
    ``n_timed_sets + 1`` times, holding the last ``n_timed_sets + 1`` outputs alive as the timed loop
    does (its caller keeps one output per input set for re-checking). The caching allocator thus
    holds enough blocks before the first timed call: otherwise the first round pays for fresh
    device allocations (hundreds of microseconds each) that later rounds do not, which reads as
    a kernel that is fast only on data it has seen (the memoisation check)."""
    held: collections.deque = collections.deque(maxlen=n_timed_sets + 1)
    started = _monotonic()
    i = 0
    while i < max(len(warm), n_timed_sets + 1) or (_monotonic() - started) * 1e3 < warmup_ms:
        held.append(fn(*warm[i % len(warm)]))
        sync()
        i += 1
        if i > 10000:
            break
    held.clear()


def time_cuda(
    fn,
    input_sets: list,
    *,
    warmup_ms: float = 25.0,
    min_trials: int = 100,
    max_trials: int = 2000,
    budget_s: float = 10.0,
    target_rse: float = 0.005,
    flush_l2: bool = True,
    after_call=None,
    warmup_sets: list | None = None,
) -> Timing:
    """Time ``fn(*inputs)`` on CUDA, rotating over ``input_sets`` (see module docstring).

    ``after_call(index, set_index, output)`` is called outside the timed window (used to keep a
    sample of timed outputs for re-checking). Warm-up runs on ``warmup_sets`` when given, so the
    first timed call on each input set is the first call that sees its data."""
    device = torch.device("cuda", torch.cuda.current_device())
    flusher = L2Flusher(device) if flush_l2 else None
    floor = idle_gap_ms(device)
    _warm_up(fn, warmup_sets or input_sets, len(input_sets), warmup_ms, lambda: _synchronize(device))
    samples: list[float] = []
    unjoined = 0
    started = _monotonic()
    k = 0
    while not _done(samples, started, min_trials, max_trials, budget_s, target_rse):
        set_index = k % len(input_sets)
        if flusher is not None:
            flusher()
        start, end, end_sync = _Event(enable_timing=True), _Event(enable_timing=True), _Event(enable_timing=True)
        _synchronize(device)
        _record(start)
        out = fn(*input_sets[set_index])
        _record(end)
        _synchronize(device)
        _record(end_sync)
        _synchronize(device)
        t = _elapsed_time(start, end)
        gap = _elapsed_time(end, end_sync)
        if gap > floor + max(0.02, 0.1 * t):
            unjoined += 1
            t = _elapsed_time(start, end_sync) - floor
        samples.append(t)
        if after_call is not None:
            after_call(k, set_index, out)
        del out
        k += 1
    return summarize(samples, unjoined, len(input_sets) if warmup_sets else 0)


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
) -> Timing:
    """Time ``fn(*inputs)`` on the CPU with a monotonic clock, rotating over ``input_sets``."""
    _warm_up(fn, warmup_sets or input_sets, len(input_sets), warmup_ms, lambda: None)
    samples: list[float] = []
    started = _monotonic()
    k = 0
    while not _done(samples, started, min_trials, max_trials, budget_s, target_rse):
        set_index = k % len(input_sets)
        t0 = _perf_counter_ns()
        out = fn(*input_sets[set_index])
        t1 = _perf_counter_ns()
        samples.append((t1 - t0) / 1e6)
        if after_call is not None:
            after_call(k, set_index, out)
        del out
        k += 1
    return summarize(samples, 0, len(input_sets) if warmup_sets else 0)


def time_callable(fn, input_sets: list, device: str, **kw) -> Timing:
    if device.startswith("cuda"):
        return time_cuda(fn, input_sets, **kw)
    kw.pop("flush_l2", None)
    return time_cpu(fn, input_sets, **kw)
