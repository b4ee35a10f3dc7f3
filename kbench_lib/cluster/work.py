"""The batch's work as the driver holds it: one job per sample key, problems waiting for a judge,
and each judge's share. Plain Python (no Ray), so the rules can be read and tested alone.

A judge is given whole problems (its reference is prepared once per problem and judge), a few
at a time so that the builds of what comes next run while it judges. A judge that has nothing
left, or only jobs whose builds are taking long (a build that hangs until its limit), takes half
of the largest share another judge has not started yet. When a judge dies, its
share and the jobs it was running go to the front of the least-loaded live judge's share (the
front of the queue when none is alive).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Iterable

from ..generation.samples import Sample
from ..suite.problems import Problem

Key = tuple  # (model, problem key, sample index): one record each


@dataclass
class Job:
    key: Key
    problem: Problem
    sample: Sample | None
    err: str | None = None  # why there is no sample (the model failed on this problem)
    deaths: int = 0  # judging processes that died while this job was the one they ran

    @property
    def candidate(self):
        return self.sample.candidate if self.sample is not None else None


def jobs_for(model: str, problem: Problem, samples: list[Sample], err: str | None, done: set) -> list[Job]:
    """The jobs of one problem, as the local runner makes them: a model's failure on the problem is
    one job without a sample (index 0); keys already recorded are left out."""
    jobs = [Job((model, problem.key, 0), problem, None, f"model {model} failed to produce a candidate: {err}")] if err is not None else []
    jobs += [Job((model, problem.key, s.index), problem, s) for s in samples]
    return [j for j in jobs if j.key not in done]


class WorkQueue:
    """Problems not yet given to a judge, in order, each a list of its jobs."""

    def __init__(self, low_water: int = 8):
        self.low_water = low_water  # a judge's share is refilled while it holds fewer jobs than this
        self._groups: deque[list[Job]] = deque()

    def __len__(self) -> int:
        return sum(len(g) for g in self._groups)

    def add(self, jobs: Iterable[Job]) -> None:
        jobs = list(jobs)
        if jobs:
            self._groups.append(jobs)

    def put_back(self, jobs: Iterable[Job], shares: list[deque] | None = None) -> None:
        """Jobs a judge could not finish, grouped by problem, first in line again: at the front of
        the live judge's share that holds the fewest jobs (``shares``: the live judges'), else at
        the front of the queue. In the queue they would wait until some judge's share ran low, and
        a share is whole problems: behind a problem of fifty samples (the throughput batch's
        adversarial one) a lost node's jobs waited for all of them."""
        by_problem: dict[str, list[Job]] = {}
        for j in jobs:
            by_problem.setdefault(j.problem.key, []).append(j)
        groups = list(by_problem.values())
        if shares:
            target = min(shares, key=len)
            target.extendleft(reversed([j for g in groups for j in g]))
            return
        for group in reversed(groups):
            self._groups.appendleft(group)

    def refill(self, share: deque, others: list[deque], stuck: bool = False) -> list[Job]:
        """Gives ``share`` whole problems from the queue while it holds fewer than ``low_water``
        jobs; with the queue empty and ``share`` empty, or ``stuck`` (none of its jobs can start:
        each waits for a build that is taking long), half (at least one) of the largest of
        ``others``, taken from its end. Returns the jobs given."""
        given: list[Job] = []
        while len(share) < self.low_water and self._groups:
            group = self._groups.popleft()
            share.extend(group)
            given += group
        if (not share or stuck) and not self._groups:
            victim = max(others, key=len, default=None)
            if victim:
                n = max(1, len(victim) // 2)
                taken = [victim.pop() for _ in range(n)][::-1]
                share.extend(taken)
                given += taken
        return given
