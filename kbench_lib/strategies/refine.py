"""``refine``: iterative refinement with execution (and profiler) feedback, as in KernelBench.

``chains`` independent conversations run side by side. Turn 0 is the one-shot prompt; each later
turn carries the chain's previous candidate and what the judge saw of it (:mod:`.feedback`:
compile log, failure, worst error, verdict, speedups, flags, profile; which blocks is the run's
``feedback`` parameter) and asks for a fixed or faster version. A chain goes on for ``turns``
turns in all, or stops at its first trusted result with ``stop_when_correct``.
"""
from __future__ import annotations

from .search import Request, Search


def run(search: Search, turns: int = 3, chains: int = 1, stop_when_correct: bool = False) -> None:
    current = search.ask([Request("sample", 0, (), c) for c in range(chains)])
    for turn in range(1, turns):
        going = [a for a in current if not (stop_when_correct and a.trusted)]
        if not going or search.exhausted:
            return
        current = search.ask([Request("refine", turn, (a,), a.request.index) for a in going])
