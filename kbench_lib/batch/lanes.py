"""Samples on their way to the judges of a batch: one lane per device, filled as samples arrive.

A problem's samples go to one lane (the one with the least work when its first sample came), so
that its reference is prepared once on one device, until that lane holds ``split_after`` samples
more than the least loaded one: the next goes there, and that lane becomes the problem's. Many
samples of few problems (KernelBench's 100 samples per problem, a search's proposals) thus keep
every GPU busy, at the cost of preparing such a problem once more on each lane it reaches (its own
seeds and eager baseline there, as any problem on another GPU has). A lane learns from
:meth:`JudgeLanes.ended_here` when it may let a problem's reference go. At most ``limit`` samples
wait or are being judged at once: past that, :meth:`JudgeLanes.put` waits, and the model feeding
the batch waits with it.

A lane takes its samples in their order, except that a sample whose build is still running lets
the first one behind it that can begin at once go first (a sample with no build, or whose build is
done): a batch that starts by building every candidate judges those that need none meanwhile.

A lane that runs dry takes a waiting sample from the lane that holds the most: the last in that
line of a problem the idle lane has prepared, while one stays waiting there; else the very last,
while two stay (preparing a problem costs about one judgement); a lane keeps a problem's reference
while another line holds samples of it that it could take. So no GPU idles at the end of a
batch while another still has a queue (without this, one of two GPUs can sit idle for the last
tenth of a batch).
:meth:`JudgeLanes.close` lets every lane finish what it holds; :meth:`JudgeLanes.abort` drops it.
"""
from __future__ import annotations

import threading
from collections import deque

from ..generation.samples import Arrival


class LanesAborted(RuntimeError):
    """The batch was stopped (a judging thread failed, or the caller was interrupted)."""


SPLIT_AFTER = 4  # a problem's lane this many samples ahead of the least loaded one: its next sample goes there


class JudgeLanes:
    def __init__(self, lanes: int, limit: int = 64, split_after: int | None = None):
        self.limit = max(1, limit)
        self.split_after = max(1, SPLIT_AFTER if split_after is None else split_after)
        self._cond = threading.Condition()
        self._lanes: list[deque[Arrival]] = [deque() for _ in range(lanes)]
        self._load = [0] * lanes  # samples given to each lane and not yet judged
        self._owner: dict[str, int] = {}  # problem key -> its lane, until its last sample is given out
        self._reached: dict[str, set[int]] = {}  # problem key -> lanes given its samples and not yet told it ended
        self._ended: set[str] = set()  # problems whose last sample has been given out
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
            least = min(range(len(self._lanes)), key=self._load.__getitem__)
            if lane is None or self._load[lane] - self._load[least] >= self.split_after:
                lane = self._owner[key] = least
            self._ended.discard(key)  # samples of a problem that had ended: it runs again
            self._reached.setdefault(key, set()).add(lane)
            if arrival.last:
                del self._owner[key]
                self._ended.add(key)
            self._lanes[lane].append(arrival)
            self._load[lane] += 1
            self._cond.notify_all()
            return lane

    def get(self, lane: int, wait: bool = True, ready=None, may_pass=None) -> Arrival | None:
        """The next sample for ``lane`` (its own, or one taken from a longer line: see the module's
        notes), waiting for one; None once the lanes are closed and none is left for it, or aborted.
        ``wait=False``: None at once when none is there yet. ``ready(arrival)``: whether a sample
        would begin without waiting for its build; where the next in line would wait, the first
        behind it that ``may_pass`` (default ``ready``) comes first, and the next keeps its place."""
        with self._cond:
            if wait:
                self._cond.wait_for(lambda: self._lanes[lane] or self._stealable(lane) is not None
                                    or self._closed or self._aborted is not None)
            if self._aborted is not None:
                return None
            line = self._lanes[lane]
            if line:
                if ready is not None and not ready(line[0]):
                    passes = may_pass or ready
                    index = next((i for i in range(1, len(line)) if passes(line[i])), None)
                    if index is not None:
                        arrival = line[index]
                        del line[index]
                        return arrival
                return line.popleft()
            found = self._stealable(lane)
            if found is None:
                return None
            victim, index = found
            line = self._lanes[victim]
            arrival = line[index]
            del line[index]
            self._load[victim] -= 1
            self._load[lane] += 1
            self._reached.setdefault(arrival.problem.key, set()).add(lane)
            return arrival

    def _stealable(self, lane: int) -> tuple[int, int] | None:
        """(lane, index) of the sample an idle ``lane`` may take, or None: from the longest other
        line, the last sample of a problem ``lane`` has reached if that line keeps one waiting,
        else its last sample if it keeps two."""
        if self._lanes[lane]:
            return None
        others = [i for i in range(len(self._lanes)) if i != lane and self._lanes[i]]
        if not others:
            return None
        victim = max(others, key=lambda i: len(self._lanes[i]))
        line = self._lanes[victim]
        if len(line) >= 2:
            for index in range(len(line) - 1, 0, -1):  # never the one next in its own line
                if lane in self._reached.get(line[index].problem.key, ()):
                    return victim, index
        if len(line) >= 3:
            return victim, len(line) - 1
        return None

    def take_waiting(self, lane: int) -> list[Arrival]:
        """The last sample waiting in ``lane``'s line (not yet taken by the lane), taken out for a
        judge elsewhere that has run dry (a Ray judging actor's one-lane line,
        :meth:`kbench_lib.cluster.lane.ActorLane.take_back`); none when nothing waits."""
        with self._cond:
            line = self._lanes[lane]
            if not line:
                return []
            arrival = line.pop()
            self._load[lane] -= 1
            self._cond.notify_all()
            return [arrival]

    def upcoming(self, lane: int) -> list:
        """The problems of the candidates waiting in ``lane``'s line, each once, in their order (a
        sample without a candidate, such as a corpus row that publishes no kernel, needs no
        reference: its problem is not prepared for it)."""
        with self._cond:
            seen: dict = {}
            for a in self._lanes[lane]:
                if getattr(a.sample, "candidate", None) is not None:
                    seen.setdefault(a.problem.key, a.problem)
            return list(seen.values())

    def wait_for_more(self, timeout: float) -> bool:
        """Waits up to ``timeout`` for a sample to be given to any lane; False at once when none
        can come any more (closed or aborted)."""
        with self._cond:
            if self._closed or self._aborted is not None:
                return False
            self._cond.wait(timeout)
            return True

    def ended_here(self, lane: int) -> list[str]:
        """Problems whose last sample has been given out and of which ``lane`` holds none waiting,
        nor could take one from another line (:meth:`_stealable`: any but the next in that line):
        once it has judged those it began, it may let their references go (and then
        :meth:`forget` them). A lane that let a problem go while another still held several of
        its samples would find them too few to take at the end of the batch, and idle while the
        other judged the rest of a problem both had prepared."""
        with self._cond:
            waiting = {a.problem.key for a in self._lanes[lane]}
            takeable = {a.problem.key for i, line in enumerate(self._lanes) if i != lane for a in list(line)[1:]}
            return [k for k in self._ended if lane in self._reached.get(k, ()) and k not in waiting and k not in takeable]

    def forget(self, lane: int, key: str) -> None:
        """``lane`` has let ``key``'s reference go."""
        with self._cond:
            lanes = self._reached.get(key)
            if lanes is not None:
                lanes.discard(lane)
                if not lanes:
                    del self._reached[key]
                    self._ended.discard(key)

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
