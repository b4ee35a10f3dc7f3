"""Work that outlives its call on another stream (threat #10-#12): the idle gap that an event after
a device-wide sync shows when nothing else runs (:func:`gap_floor`), the share of unjoined calls
that makes a timed run suspect, and the re-check that must agree before it is reported.

A timed call (:mod:`kbench_lib.measure.timing`) records an end event on its stream, syncs the whole
device and records a second one; a gap between the two beyond this floor, with a margin, is work
that was still running elsewhere when the calling stream was done: such a call is timed up to the
device-wide sync instead and counted. The functions here are bound at import, as the timing
module's are (the worker checks them after the candidate ran)."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from .head_start import Gate, HeadStart
from .timing_summary import Timing, _q

_monotonic = time.monotonic
_Event = torch.cuda.Event
_elapsed_time = torch.cuda.Event.elapsed_time
_record = torch.cuda.Event.record
_synchronize = torch.cuda.synchronize

UNJOINED_QUANTILE = 0.9  # a call counts as unjoined past this quantile of the idle gaps (and a margin)
UNJOINED_SHARE = 0.25  # a run with more unjoined calls than this share is re-checked; flagged when the re-check agrees
RECHECK_CALLS = 100  # calls of that re-check, behind freshly measured floors (at most RECHECK_S seconds, at least 20 calls)
RECHECK_S = 2.0


@dataclass
class GapFloor:
    """The idle gaps behind one head start: ``median_ms`` is taken off a call counted as unjoined
    (its time runs to the device-wide sync), ``high_ms`` (the ``UNJOINED_QUANTILE``) is what its
    gap must exceed, with a margin, to count. The threshold is a high quantile, not the median: the
    host wakes from the sync late on a fair share of calls, and a median floor would count each of
    those unjoined (about 30% of a legitimate single-stream row sum's calls)."""
    median_ms: float
    high_ms: float


def gap_floor(device: torch.device, trials: int = 50, spin: HeadStart | Gate | None = None) -> GapFloor:
    """The gaps between an event recorded at the end of a call and one recorded after a
    device-wide sync, when nothing else is running: the floor that unjoined work is judged over.
    With ``spin``, each event follows that head start, so the host waits as long in the sync as it
    does behind a timed call. Why this matters (our reading, not measured apart): after a longer
    wait the host wakes later, and against a floor measured after no wait a legitimate CUDA kernel
    behind a 320 us head start can have about a quarter of its calls counted as unjoined."""
    gaps = sorted(_idle_gaps(device, trials, spin))
    return GapFloor(statistics.median(gaps), _q(gaps, UNJOINED_QUANTILE))


def _idle_gaps(device: torch.device, trials: int, spin: HeadStart | Gate | None) -> list[float]:
    gaps = []
    stream = torch.cuda.current_stream(device).cuda_stream if spin is not None else None
    for _ in range(trials):
        a, b = _Event(enable_timing=True), _Event(enable_timing=True)
        if spin is not None:
            _synchronize(device)
            spin(stream)
        _record(a)
        if spin is not None:
            spin.release()
        _synchronize(device)
        _record(b)
        _synchronize(device)
        gaps.append(_elapsed_time(a, b))
    return gaps


def unjoined_suspected(unjoined: int, calls: int) -> bool:
    """More than ``UNJOINED_SHARE`` of ``calls`` had work outlive them on another stream: a single
    late gap is host jitter; a candidate that leaves work on another stream does so on (nearly)
    every call."""
    return calls > 0 and unjoined > UNJOINED_SHARE * calls


def unjoined_confirmed(t: Timing) -> bool:
    """The timed run and its re-check both had too many unjoined calls. One run is not enough: a
    burst of late host wake-ups can count a third of a legitimate single-stream kernel's calls as
    unjoined in one judgement and none in the next. A candidate that leaves
    work running does so in the re-check too; one that leaves it only in the timed run has those
    calls timed to the device-wide sync (no gain), and one that leaves it only in the re-check gains
    nothing there (its times are not used)."""
    return unjoined_suspected(t.unjoined_trials, t.n_trials) and unjoined_suspected(t.unjoined_recheck, t.recheck_calls)


def _recheck_unjoined(one, input_sets: list) -> tuple[int, int]:
    """(unjoined calls, calls) of a re-check: ``RECHECK_CALLS`` more flushed calls of ``one(args)``
    over the timed sets (at most ``RECHECK_S`` seconds, at least 20 calls); their times are not used."""
    started, unjoined, calls = _monotonic(), 0, 0
    while calls < RECHECK_CALLS and (calls < 20 or _monotonic() - started < RECHECK_S):
        _, late, out = one(input_sets[calls % len(input_sets)])
        del out
        unjoined += late
        calls += 1
    return unjoined, calls


__all__ = ["RECHECK_CALLS", "RECHECK_S", "UNJOINED_QUANTILE", "UNJOINED_SHARE", "GapFloor", "gap_floor", "unjoined_confirmed",
           "unjoined_suspected"]
