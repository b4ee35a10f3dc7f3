"""``evolve``: robust-kbench's evolutionary search.

1. Translation: ``population`` one-shot proposals; while none is trusted (correct and unflagged),
   up to ``translate_turns`` rounds in which each failed one is sent back with its error
   (:mod:`.prompts`' refinement prompt).
2. Generations: ``proposals`` new candidates per generation, each a mutation of one parent or
   (with probability ``crossover``) a crossover of two, parents drawn from the elite: the
   ``population`` best trusted candidates so far by speedup, better ranks more often. Prompts show
   each parent's verdict and profile. A generation's proposals are made concurrently and judged
   as one batch; selection only ever looks at trusted results.

The generator that draws parents is seeded by the problem and ``seed``, so a search replays. A
proposal's sample index (part of its cache key) is ``turn * proposals + i``: unique over the search,
so a generation whose elite did not change asks for new answers, not the previous generation's.
"""
from __future__ import annotations

import hashlib
import random

from .search import Attempt, Request, Search


def elite(attempts: list[Attempt], size: int) -> list[Attempt]:
    """The ``size`` best trusted attempts by speedup (ties: the earlier first)."""
    return sorted((a for a in attempts if a.trusted), key=lambda a: (-a.score, a.order))[:size]


def _pick(rng: random.Random, pool: list[Attempt], k: int) -> tuple[Attempt, ...]:
    """k distinct parents, rank-weighted (the best of n is n times as likely as the worst)."""
    weights = [len(pool) - i for i in range(len(pool))]
    chosen: list[Attempt] = []
    while len(chosen) < k:
        a = rng.choices(pool, weights)[0]
        if a not in chosen:
            chosen.append(a)
    return tuple(chosen)


def run(search: Search, population: int = 4, generations: int = 3, proposals: int = 4, translate_turns: int = 2,
        crossover: float = 0.3, seed: int = 0) -> None:
    rng = random.Random(int(hashlib.sha256(f"{search.problem.key}|evolve|{seed}".encode()).hexdigest()[:16], 16))
    last = search.ask([Request("sample", 0, (), i) for i in range(population)])
    turn = 1
    while not any(a.trusted for a in search.attempts) and turn <= translate_turns and not search.exhausted:
        failed = [a for a in last if not a.trusted][:population]
        last = search.ask([Request("translate", turn, (a,), a.request.index) for a in failed])
        if not last:
            break
        turn += 1
    for _ in range(generations):
        pool = elite(search.attempts, population)
        if not pool or search.exhausted:
            return
        requests = []
        for i in range(proposals):
            # the index is unique over the whole search: with an unchanged elite the prompts repeat,
            # and a repeated (prompt, index) would be the same cached answer judged again
            index = turn * proposals + i
            if len(pool) >= 2 and rng.random() < crossover:
                requests.append(Request("crossover", turn, _pick(rng, pool, 2), index))
            else:
                requests.append(Request("mutate", turn, _pick(rng, pool, 1), index))
        search.ask(requests)
        turn += 1
