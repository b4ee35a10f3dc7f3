"""One device's candidates judged with their unmeasured stages overlapped (issue 13).

A judgement has stages that nothing measures (the worker's start, its correctness calls; the
judge's comparisons and re-checks of what the worker left) and stages that measure the GPU (the
worker's profile and timed calls; the judge's own eager baseline and reference profile). A lane
judges its samples in order and lets the next candidate's worker start, load and run its
correctness calls while the judge checks the previous candidate's outputs. What may run beside
what on one device:

- the next worker starts only after the previous worker's process has ended (never two workers);
- before it starts, the judge opens the previous candidate's result files and removes its job
  folder (:meth:`Judgement.detach`): both are judged on the problem's same input sets, and the
  next one must find nothing of the previous one's;
- the next worker waits behind its gate (:func:`kbench_lib.isolation.sandbox.start_isolated`) before its
  profile and timed calls until the judge has finished the previous candidate, so its measured
  calls hold the GPU alone;
- the judge's own measurements of a problem (:meth:`PreparedProblem.measure_now`) are made
  before that problem's first worker starts, while no worker runs;
- overlap only where workers run in their own PID namespace (the next cannot see or signal
  the judge or the previous worker) and the job folder is the judge's own.

A candidate that ran out of device memory, or whose checks ran the judge out of device memory,
while another judgement shared the device is judged again alone: a neighbour's memory must not
decide a verdict. Verdicts are the same as judging one at a time; only the wall time differs.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from ..judging.pipeline import Judgement, Verdict


@dataclass
class Step:
    """One sample on its way through a lane: its judgement under way, or its verdict already
    decided (no candidate, a reference that could not be prepared, the judge unable to start)."""
    arrival: Any
    judgement: Judgement | None = None
    verdict: Verdict | None = None
    beside: bool = False  # its worker ran beside the judge's checks of another candidate, or beside it preparing another problem
    alone: bool = False  # a second judgement, made with nothing beside it


@dataclass
class OverlappingLane:
    """Judges one lane's samples in order, two at a time where allowed.

    ``take(wait)``: the lane's next arrival (None when the lane is done; with ``wait=False``, None
    also when none is there yet). ``ready(arrival)``: whether it can start at once (its build is
    done). ``begin(arrival, gated)``: its :class:`Step` (the reference prepared and measured, the
    worker started; raises only to stop the lane, once its batch is interrupted). ``finish(step, beside)``: its verdict, or None when the judge's
    own checks ran out of device memory while ``beside`` another worker (never raises).
    ``record(step, verdict)``: writes it. ``set_aside(step)``: it will be begun again, alone.
    ``overlap``: False judges one at a time."""
    take: Callable[[bool], Any]
    ready: Callable[[Any], bool]
    begin: Callable[[Any, bool], Step]
    finish: Callable[[Step, bool], Verdict | None]
    record: Callable[[Step, Verdict], None]
    set_aside: Callable[[Step], None] = lambda step: None  # a step given up, to be begun again alone
    overlap: bool = True
    again: deque = field(default_factory=deque)  # samples to judge again alone
    judged_again: int = 0

    def run(self) -> None:
        cur: Step | None = None
        nxt: Step | None = None
        held = None  # an arrival taken and not yet begun
        try:
            while True:
                if cur is None:
                    while self.again:
                        self._alone(self.again.popleft())
                    arrival = held if held is not None else self.take(True)
                    held = None
                    if arrival is None:
                        return
                    cur = self.begin(arrival, False)
                nxt = None
                if cur.judgement is not None:
                    cur.judgement.wait()
                    if self.overlap and not self.again and cur.judgement.isolated:
                        held = self.take(False)
                        if held is not None and self.ready(held) and cur.judgement.detach():
                            nxt, held = self.begin(held, True), None
                            nxt.beside = nxt.judgement is not None
                try:
                    self._end(cur, beside=nxt is not None and nxt.beside)
                finally:
                    if nxt is not None and nxt.judgement is not None:
                        nxt.judgement.open_gate()
                cur = nxt
        except BaseException:
            for step in (cur, nxt):  # never leave a worker running or a job folder behind
                if step is not None and step.judgement is not None:
                    try:
                        step.judgement.finish()
                    except BaseException:  # noqa: BLE001 - the first error is the one raised
                        pass
            raise

    def _end(self, step: Step, beside: bool) -> None:
        v = step.verdict if step.judgement is None else self.finish(step, beside and not step.alone)
        if v is None or ((step.beside or beside) and v.failure == "oom" and not step.alone):
            self.set_aside(step)
            self.again.append(step.arrival)  # a neighbour's memory must not decide the verdict
            self.judged_again += 1
            return
        self.record(step, v)

    def _alone(self, arrival) -> None:
        step = self.begin(arrival, False)
        step.alone = True
        if step.judgement is not None:
            step.judgement.wait()
        self._end(step, beside=False)
