"""One problem's search: proposals asked for, checked by verifiers, judged as a batch, recorded.

A strategy (:mod:`.single`, :mod:`.refine`, :mod:`.evolve`) only decides *what* to ask for next:
it hands :meth:`Search.ask` a list of :class:`Request` (an operation, the turn or generation, the
parent attempts, a sample index) and gets back one :class:`Attempt` per proposal, each with the
observation it may decide from (:mod:`.observations`). Everything else happens here, the same way
for every strategy:

1. the proposer (a language model or the offline tuner, :mod:`.proposers`) makes the candidates,
   all of one call concurrently;
2. verifiers (:mod:`.verifiers`), when the run has any, predict failures; a rejected candidate is
   not judged unless the run asks for ground truth; every decision is recorded beside the verdict;
3. the rest is judged as one batch (builds in parallel, then one judgement at a time on the
   device, against the problem's reference prepared once), and each verdict is recorded at once
   with its proposal id, parents, operation, turn, verifier decisions and tokens;
4. budgets (proposals, judgements, wall time per problem) cut the requests short.

A search is resumable: a proposal already recorded in the run under the same id and source is not
judged again; its record is read back instead (a language model answers it from the cache).
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field, replace

from ..batch.held_references import prepare_reference
from ..judging.pipeline import JudgeOptions
from ..generation.models import Sample
from ..suite.problems import Problem
from ..scoring.records import row_from_verdict, truncate
from ..batch.runner import start_builds
from ..batch.verdicts import _error_verdict, _judge_one
from .observations import ObservationStore, observation_from_row, observation_key

REJECTED = "verifier_rejected"  # the failure of a record whose candidate a verifier kept from the judge


@dataclass(frozen=True)
class Budget:
    """Limits per problem; None is unlimited."""

    proposals: int | None = None  # candidates asked of the proposer (model calls)
    judgements: int | None = None  # candidates run by the judge
    wall_s: float | None = None  # seconds from the start of the problem's search

    def as_dict(self) -> dict:
        return {"proposals": self.proposals, "judgements": self.judgements, "wall_s": self.wall_s}


@dataclass(frozen=True)
class Request:
    operation: str  # sample, refine, translate, mutate, crossover
    turn: int  # refinement turn, or evolution step (translation turns, then generations)
    parents: tuple = ()  # Attempts this proposal is made from
    index: int = 0  # sample index: tells otherwise identical requests apart (part of the cache key)


@dataclass
class Decision:
    """One verifier's prediction for one candidate."""

    verifier: str
    passed: bool
    reason: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class Attempt:
    id: str
    order: int
    request: Request
    sample: Sample
    decisions: dict = field(default_factory=dict)  # verifier name -> Decision
    observation: dict = field(default_factory=dict)
    row: dict | None = None

    @property
    def candidate(self):
        return self.sample.candidate

    @property
    def source(self) -> str | None:
        return self.sample.candidate.source if self.sample.candidate is not None else None

    @property
    def knobs(self) -> dict | None:
        return self.sample.meta.get("knobs")

    @property
    def trusted(self) -> bool:
        return bool(self.observation.get("trusted"))

    @property
    def rejected(self) -> bool:
        return any(not d.passed for d in self.decisions.values())

    @property
    def score(self) -> float:
        """What selection maximises: the speedup over eager of a trusted result (-inf otherwise)."""
        s = self.observation.get("speedup_eager")
        return float(s) if self.trusted and s is not None else float("-inf")


class Judging:
    """The device side of a run: each problem's reference prepared once, candidates built in
    parallel and judged one at a time (one lock: timings never overlap)."""

    def __init__(self, opts: JudgeOptions, device: str, build_jobs: int = 0):
        self.opts, self.device, self.build_jobs = replace(opts, device=device), device, build_jobs
        self.lock = threading.Lock()
        self._prepared: dict[str, object] = {}

    def verdicts(self, problem: Problem, samples: list[Sample]) -> list:
        with self.lock:
            if problem.key not in self._prepared:
                self._prepared[problem.key] = prepare_reference(problem, self.device, self.opts)
            prepared = self._prepared[problem.key]
            cands = [s.candidate for s in samples if s.candidate is not None]
            pool, builds = start_builds(cands, self.device, self.opts, self.build_jobs) if self.build_jobs > 1 else (None, {})
            try:
                out = []
                for s in samples:
                    if s.candidate is not None and s.candidate.sha in builds:
                        try:
                            builds[s.candidate.sha].result()
                        except Exception:  # noqa: BLE001 - as in the runner: the judge builds it again and records what went wrong
                            pass
                    out.append(_judge_one(problem, s, None, prepared, self.device, self.opts))
                return out
            finally:
                if pool is not None:
                    pool.shutdown(wait=False, cancel_futures=True)

    def release(self, problem: Problem) -> None:
        with self.lock:
            prepared = self._prepared.pop(problem.key, None)
        if prepared is not None and not isinstance(prepared, str):
            prepared.release()


@dataclass
class SearchEnv:
    """What every problem's search of a run shares."""

    run_id: str
    model: str
    strategy: str  # the label recorded: the strategy's name, "+verify" when verifiers run
    proposer: object
    judging: Judging
    write: object  # callable(row): appends one record (thread-safe)
    store: ObservationStore
    budget: Budget = field(default_factory=Budget)
    verifiers: tuple = ()
    ground_truth: bool = False  # judge candidates a verifier rejected too (to measure the verifiers)
    params: dict = field(default_factory=dict)
    on_row: object = None  # callable(row), e.g. a progress bar


class Search:
    def __init__(self, problem: Problem, env: SearchEnv, recorded: dict[str, dict] | None = None):
        self.problem, self.env = problem, env
        self.recorded = recorded or {}
        self.attempts: list[Attempt] = []
        self.n_judged = 0
        self.started = time.monotonic()
        self._params = json.dumps({**env.params, "budget": env.budget.as_dict(), "verifiers": [v.name for v in env.verifiers],
                                   "ground_truth": env.ground_truth}, sort_keys=True, default=str)

    # budgets
    def remaining(self) -> int | None:
        """How many more proposals the budgets allow now (None: no limit)."""
        b = self.env.budget
        if b.wall_s is not None and time.monotonic() - self.started >= b.wall_s:
            return 0
        caps = [b.proposals - len(self.attempts)] if b.proposals is not None else []
        if b.judgements is not None:
            caps.append(b.judgements - self.n_judged)
        return max(0, min(caps)) if caps else None

    @property
    def exhausted(self) -> bool:
        return self.remaining() == 0

    def judged(self) -> list[Attempt]:
        return [a for a in self.attempts if a.observation.get("judged")]

    # the one step every strategy takes
    def ask(self, requests: list[Request]) -> list[Attempt]:
        n = self.remaining()
        requests = list(requests if n is None else requests[:n])
        if not requests:
            return []
        samples = self.env.proposer.propose(self.problem, requests)
        made = []
        for request, sample in zip(requests, samples):
            if sample is None:  # the proposer had nothing (new) to offer for this request
                continue
            order = len(self.attempts)
            made.append(Attempt(f"p{order}", order, request, sample))
            self.attempts.append(made[-1])
        fresh = [a for a in made if not self._resume(a)]
        self._verify(fresh)
        self._judge_and_record(fresh)
        return made

    def _resume(self, a: Attempt) -> bool:
        row = self.recorded.get(a.id)
        sha = a.candidate.sha[:16] if a.candidate is not None else None
        if row is None or row.get("kernel_sha") != sha:
            return False
        a.row = row
        for name, decision in dict(row.get("verify_decisions") or {}).items():
            a.decisions[name] = Decision(name, decision != "fail")
        a.observation = self._observe(a, row)
        self.n_judged += bool(a.observation.get("judged"))
        return True

    def _verify(self, attempts: list[Attempt]) -> None:
        candidates = [a for a in attempts if a.candidate is not None]
        for verifier in self.env.verifiers:
            if not candidates:
                return
            for a, decision in zip(candidates, verifier.check(self.problem, candidates, self.judged())):
                a.decisions[verifier.name] = decision

    def _judge_and_record(self, attempts: list[Attempt]) -> None:
        to_judge = [a for a in attempts if a.candidate is not None and (self.env.ground_truth or not a.rejected)]
        verdicts = dict(zip((a.id for a in to_judge), self.env.judging.verdicts(self.problem, [a.sample for a in to_judge])))
        for a in attempts:
            judged = a.id in verdicts
            verdict = verdicts.get(a.id) or self._unjudged(a)
            self.n_judged += judged
            a.row = self._row(a, verdict, judged)
            a.observation = self._observe(a, a.row)
            self.env.write(a.row)
            if self.env.on_row is not None:
                self.env.on_row(a.row)

    def _unjudged(self, a: Attempt):
        j = self.env.judging
        if a.candidate is None:
            return _judge_one(self.problem, a.sample, None, None, j.device, j.opts)
        reasons = "; ".join(f"{d.verifier}: {d.reason}" for d in a.decisions.values() if not d.passed)
        v = _error_verdict(self.problem, a.candidate.backend, j.device, j.opts, REJECTED, f"rejected before judging by {reasons}")
        v.kernel_sha = a.candidate.sha[:16]
        return v

    def _observe(self, a: Attempt, row: dict) -> dict:
        fresh = observation_from_row(row)
        if not fresh["judged"] or a.candidate is None:
            return fresh
        j = self.env.judging
        key = observation_key(self.problem.sha, a.candidate.sha, row.get("device_name"), row.get("small"), j.opts.precision)
        return self.env.store.settle(key, fresh)

    def _row(self, a: Attempt, verdict, judged: bool) -> dict:
        d = a.decisions.values()
        meta = {k: v for k, v in a.sample.meta.items() if k != "knobs"}
        extra = {
            **meta, "proposal": a.order, "proposal_id": a.id, "parent_ids": [p.id for p in a.request.parents],
            "operation": a.request.operation, "judged": judged,
            "verify_decisions": [(x.verifier, "pass" if x.passed else "fail") for x in d] or None,
            "verify_reasons": truncate("\n".join(f"{x.verifier}: {x.reason}" for x in d if x.reason)) or None,
            "verify_prompt_tokens": sum(x.prompt_tokens or 0 for x in d) if d else None,
            "verify_completion_tokens": sum(x.completion_tokens or 0 for x in d) if d else None,
            "knobs": sorted(a.knobs.items()) if a.knobs else None, "strategy_params": self._params,
        }
        if a.candidate is None:
            extra["kernel_sha"] = None
        return row_from_verdict(verdict, run_id=self.env.run_id, model=self.env.model, strategy=self.env.strategy,
                                sample=a.request.index, turn=a.request.turn, tags=self.problem.tags, extra=extra)
