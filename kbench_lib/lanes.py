"""Samples on their way to the judges of a batch: one lane per device, filled as samples arrive.

A problem's samples all go to one lane (the one with the least work when its first sample came),
so that its reference is prepared once on one device; the lane is the problem's until its last
sample has been handed out. At most ``limit`` samples wait or are being judged at once: past
that, :meth:`JudgeLanes.put` waits, and the model feeding the batch waits with it.
:meth:`JudgeLanes.close` lets every lane finish what it holds; :meth:`JudgeLanes.abort` drops it.
"""
from __future__ import annotations

import threading
from collections import deque

from .models import Arrival


class LanesAborted(RuntimeError):
    """The batch was stopped (a judging thread failed, or the caller was interrupted)."""


class JudgeLanes:
    def __init__(self, lanes: int, limit: int = 64):
        self.limit = max(1, limit)
        self._cond = threading.Condition()
        self._lanes: list[deque[Arrival]] = [deque() for _ in range(lanes)]
        self._load = [0] * lanes  # samples given to each lane and not yet judged
        self._owner: dict[str, int] = {}  # problem key -> its lane, until its last sample is given out
        self._closed = False
        self._aborted: BaseException | None = None

    @property
    def pending(self) -> int:
        return sum(self._load)

    @property
    def aborted(self) -> BaseException | None:
        return self._aborted

    def put(self, arrival: Arrival) -> int:
        """Gives ``arrival`` to its problem's lane (waiting while ``limit`` samples are pending);
        returns the lane."""
        with self._cond:
            self._cond.wait_for(lambda: self._aborted is not None or sum(self._load) < self.limit)
            if self._aborted is not None:
                raise LanesAborted("the batch stopped") from self._aborted
            key = arrival.problem.key
            lane = self._owner.get(key)
            if lane is None:
                lane = min(range(len(self._lanes)), key=self._load.__getitem__)
                self._owner[key] = lane
            if arrival.last:
                del self._owner[key]
            self._lanes[lane].append(arrival)
            self._load[lane] += 1
            self._cond.notify_all()
            return lane

    def get(self, lane: int, wait: bool = True) -> Arrival | None:
        """The next sample for ``lane``, waiting for one; None once the lanes are closed and this
        one is empty, or aborted. ``wait=False``: None at once when none is there yet."""
        with self._cond:
            if wait:
                self._cond.wait_for(lambda: self._lanes[lane] or self._closed or self._aborted is not None)
            if self._aborted is not None or not self._lanes[lane]:
                return None
            return self._lanes[lane].popleft()

    def done(self, lane: int) -> None:
        """A sample ``lane`` took has been judged and recorded."""
        with self._cond:
            self._load[lane] -= 1
            self._cond.notify_all()

    def close(self) -> None:
        """No more samples come: each lane ends once it has judged what it holds."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def abort(self, error: BaseException) -> None:
        """Stops every lane now; samples still waiting are dropped (they were never recorded, so a
        rerun with the same run id asks for them again)."""
        with self._cond:
            self._aborted = error
            for lane in self._lanes:
                lane.clear()
            self._cond.notify_all()


__all__ = ["JudgeLanes", "LanesAborted"]
