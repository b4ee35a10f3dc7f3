"""The device-busy clock: what the GPU did for one call, read from CUPTI through torch.profiler.

A separate pass of profiled calls after the timed runs (same L2 flush, same rotation of input sets):
each call runs inside its own profiler range, after the flush and a device-wide sync, and the range
closes after another sync, so every device activity (kernel, copy, fill) that starts inside a range
is that call's work, on whatever stream it ran. CUPTI timestamps share the host clock, so
activities are assigned to calls by start time. Two numbers per call: the summed durations of its
activities (``device_ms``) and the time some stream was busy, overlaps counted once
(``device_union_ms``; what the side-stream check in :mod:`kbench_lib.judging.guards` compares
with the timed clock).

Cost. A profiled call of a model of many kernels costs far more than its own time: CUPTI records
every launch and every kernel, the profiler every operator. The number of profiled calls follows
the work (:func:`device_clock_calls`), and the trace is read as the profiler's own event records
(``kineto_results.events()``), never through ``profile.events()``, which builds a Python object
and an operator tree for every record: reading 30 calls of a two-layer GRU (about 190,000 records)
takes about 10 s that way and under 1 s from the records, for the same busy time.

Only the outermost ranges named :data:`WINDOW` count as calls; a range opened inside a call (a
candidate can open ranges of any name) is part of that call, and a trace whose outermost ranges do
not number the calls profiled is not used (None).

The functions this module calls are bound at import (the worker imports it before any candidate
code runs and checks the bindings afterwards: :mod:`kbench_lib.isolation.worker.tamper`)."""
from __future__ import annotations

import bisect
import statistics

import torch
from torch.autograd import DeviceType as _DeviceType
from torch.profiler import ProfilerActivity as _Activity
from torch.profiler import profile as _profile
from torch.profiler import record_function as _record_function

from . import profiling as _profiling

_synchronize = torch.cuda.synchronize
_PROFILER = _profiling.PROFILER
_CPU, _CUDA = _DeviceType.CPU, _DeviceType.CUDA

WINDOW = "kbench::timed_call"  # the profiler range around each profiled call
DEVICE_CLOCK_S = 0.25  # profiled calls behind the device-busy clock: about this long, within the bounds below
DEVICE_CALLS_MIN = 30
DEVICE_CALLS_MAX = 200
DEVICE_CLOCK_MAX_S = 1.0  # ... but DEVICE_CALLS_MIN calls of a long call only as far as this, and at least:
DEVICE_CALLS_FLOOR = 8


def _spans_per_window(windows: list[tuple[float, float]], spans: list[tuple[float, float]]) -> list[list[tuple[float, float]]]:
    """The device ``spans`` (start, duration) that start inside each host window (start, end), as
    (start, end) intervals, windows in time order; a span outside every window is nobody's."""
    windows = sorted(windows)
    starts = [w[0] for w in windows]
    owned: list[list[tuple[float, float]]] = [[] for _ in windows]
    for start, duration in spans:
        i = bisect.bisect_right(starts, start) - 1
        if i >= 0 and start <= windows[i][1]:
            owned[i].append((start, start + duration))
    return owned


def busy_per_window(windows: list[tuple[float, float]], spans: list[tuple[float, float]]) -> list[float]:
    """Per host window, the summed durations of the device spans that start inside it."""
    return [sum(b - a for a, b in owned) for owned in _spans_per_window(windows, spans)]


def union_per_window(windows: list[tuple[float, float]], spans: list[tuple[float, float]]) -> list[float]:
    """Per host window, the time covered by the device spans that start inside it, overlapping
    spans counted once: how long some stream was busy. Unlike the sum (``busy_per_window``),
    kernels running side by side on several streams, or overlapping through programmatic dependent
    launch, add no more than the time they share."""
    out = []
    for owned in _spans_per_window(windows, spans):
        total, reach = 0.0, float("-inf")
        for a, b in sorted(owned):
            if b > reach:
                total += b - max(a, reach)
                reach = b
        out.append(total)
    return out


def outermost(windows: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The windows not inside (or overlapping the end of) an earlier one, in time order: a range
    opened during a call belongs to that call."""
    kept: list[tuple[float, float]] = []
    for w in sorted(windows):
        if not kept or w[0] > kept[-1][1]:
            kept.append(w)
    return kept


def device_clock_calls(median_ms: float) -> int:
    """Profiled calls behind the device-busy clock for a call of ``median_ms``: as many as take
    ``DEVICE_CLOCK_S``, between ``DEVICE_CALLS_MIN`` and ``DEVICE_CALLS_MAX``; for calls so long that
    ``DEVICE_CALLS_MIN`` of them would take over ``DEVICE_CLOCK_MAX_S``, as many as take that long,
    ``DEVICE_CALLS_FLOOR`` at least. A profiled call of a model of many kernels costs far more than
    its own time (every kernel and operator becomes a profiler event): its count follows the work."""
    ms = max(median_ms, 1e-3)
    least = DEVICE_CALLS_MIN if DEVICE_CALLS_MIN * ms <= DEVICE_CLOCK_MAX_S * 1e3 else max(DEVICE_CALLS_FLOOR, int(DEVICE_CLOCK_MAX_S * 1e3 / ms))
    return int(min(DEVICE_CALLS_MAX, max(least, DEVICE_CLOCK_S * 1e3 / ms)))


def _is_annotation(e) -> bool:
    """A profiler range as the trace shows it (on the host, and mirrored on the device timeline
    over its kernels: counting that would count them twice)."""
    flag = getattr(e, "is_user_annotation", None)
    return bool(flag()) if callable(flag) else e.name() == WINDOW


def windows_and_spans(records, device_index: int) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """From the profiler's event records: the host windows of the profiled calls (outermost
    :data:`WINDOW` ranges; start, end in us) and the device activities of GPU ``device_index``
    (start, duration in us; device tracing records every GPU of the process, another judging
    thread's too), ranges left out."""
    windows, spans = [], []
    for e in records:
        kind = e.device_type()
        if kind == _CPU:
            if e.name() == WINDOW:
                start = e.start_ns() / 1e3
                windows.append((start, start + e.duration_ns() / 1e3))
        elif kind == _CUDA and e.device_index() in (device_index, -1) and not _is_annotation(e):
            spans.append((e.start_ns() / 1e3, e.duration_ns() / 1e3))
    return outermost(windows), spans


def device_busy_ms(fn, input_sets: list, calls: int, flusher=None, one_thread: bool = False) -> tuple[float | None, int, float | None]:
    """Device-busy clock: (median over ``calls`` profiled calls of the summed duration of every
    device activity the call launched, on any stream; number of calls behind it; median over the
    same calls of the time some stream was busy, overlaps counted once). (None, 0, None) when the
    trace holds no call, or not as many as were profiled.

    ``one_thread``: the session on the process's profiler thread (the judge's side,
    :func:`kbench_lib.measure.profiling.on_session_thread`)."""
    if one_thread:
        return _profiling.on_session_thread(lambda: device_busy_ms(fn, input_sets, calls, flusher))
    device = torch.cuda.current_device()
    with _PROFILER, _profile(activities=[_Activity.CPU, _Activity.CUDA]) as prof:
        for k in range(calls):
            if flusher is not None:
                flusher()
            _synchronize()
            with _record_function(WINDOW):
                out = fn(*input_sets[k % len(input_sets)])
                _synchronize()
            del out
    windows, spans = windows_and_spans(prof.profiler.kineto_results.events(), device)
    if not windows or len(windows) != calls:
        return None, 0, None
    busy = busy_per_window(windows, spans)
    return statistics.median(busy) / 1e3, len(busy), statistics.median(union_per_window(windows, spans)) / 1e3


__all__ = ["DEVICE_CALLS_FLOOR", "DEVICE_CALLS_MAX", "DEVICE_CALLS_MIN", "DEVICE_CLOCK_MAX_S", "DEVICE_CLOCK_S", "WINDOW",
           "busy_per_window", "device_busy_ms", "device_clock_calls", "outermost", "union_per_window", "windows_and_spans"]
