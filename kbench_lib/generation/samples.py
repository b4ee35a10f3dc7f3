"""What a model hands the judge: a :class:`Sample` (a candidate, or why there is none), an
:class:`Arrival` (a sample as it arrives, for a runner that judges while the model generates), and
:class:`ModelUnavailable` (the model cannot answer at all). The registry of models is
:mod:`kbench_lib.generation.models`; the language models of :mod:`kbench_lib.generation` make these too.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.candidates import Candidate
from ..suite.problems import Problem


@dataclass(frozen=True)
class Sample:
    index: int
    candidate: Candidate | None
    error: str | None = None  # the candidate could not even be read, or the model gave none
    failure: str | None = None  # the record's failure category when there is no candidate (default load_error)
    meta: dict = field(default_factory=dict, compare=False)  # generation columns of the record (prompt_sha, tokens ...)


@dataclass(frozen=True)
class Arrival:
    """One sample as it arrives from a model, for a runner that judges while the model generates:
    ``sample`` (None when the model failed on the whole problem: ``error`` says why, and the
    record takes sample index 0), and ``last``: no more arrivals follow for ``problem`` (its
    prepared reference may be released)."""

    problem: Problem
    sample: Sample | None
    error: str | None = None
    last: bool = True

    @property
    def index(self) -> int:
        return self.sample.index if self.sample is not None else 0


class ModelUnavailable(Exception):
    """The model cannot answer at all (a bad key, an unreachable server, a replay-cache miss): the
    batch stops with this error instead of recording a failure for every problem; what was already
    recorded stays, and running again with the same run id resumes."""
