"""Proposers: where a search's candidates come from, one :class:`~.search.Request` at a time.

``propose(problem, requests) -> [Sample | None]`` (None: nothing new to offer for that request).

- :class:`LanguageModelProposer`: a language model; the one-shot prompt for ``sample``, the
  refinement prompt for ``refine`` and ``translate``, the evolution prompts for ``mutate`` and
  ``crossover`` (:mod:`.prompts`); all of one call asked concurrently, through the cache.
- :class:`~.tuner.TunerProposer` (``tune``, ``tune:PATH``): the offline autotuner.
- :class:`FixedProposer`: any other offline model (``reference``, ``folder:PATH``,
  ``torch-compile``): its candidates for ``sample`` requests and nothing else, so that verifiers
  and best-of-k can run over a fixed set of candidates.
"""
from __future__ import annotations

from ..generation.prompts import PromptOptions, build_messages
from ..generation.spec import is_tuner
from ..generation.models import Sample, get_model
from ..suite.problems import Problem
from .feedback import FeedbackOptions
from .prompts import evolve_messages, refine_messages


class LanguageModelProposer:
    def __init__(self, model, feedback: FeedbackOptions | None = None):
        self.model = model  # a kbench_lib.generation.LanguageModel
        self.prompt: PromptOptions = model.options.prompt
        self.feedback = feedback or FeedbackOptions()

    def messages(self, problem: Problem, request) -> list[dict]:
        op, parents = request.operation, request.parents
        if op == "sample" or not parents:
            return build_messages(problem, self.prompt)
        if op in ("refine", "translate"):
            p = parents[0]
            return refine_messages(problem, self.prompt, p.source, p.observation, self.feedback)
        if op in ("mutate", "crossover"):
            return evolve_messages(problem, self.prompt, [(p.source, p.observation) for p in parents], self.feedback)
        raise ValueError(f"unknown operation {op!r}")

    def propose(self, problem: Problem, requests: list) -> list[Sample | None]:
        return self.model.ask(problem, [(self.messages(problem, r), r.index) for r in requests])

    def close(self) -> None:
        self.model.close()


class FixedProposer:
    def __init__(self, generate):
        self.generate = generate
        self._cache: dict[str, list[Sample]] = {}

    def propose(self, problem: Problem, requests: list) -> list[Sample | None]:
        if problem.key not in self._cache:
            self._cache[problem.key] = self.generate(problem)
        have = {s.index: s for s in self._cache[problem.key]}
        return [have.get(r.index) if r.operation == "sample" else None for r in requests]

    def close(self) -> None:
        pass


def make_proposer(model: str, backends: tuple[str, ...] | None = None, generation=None, feedback=None, seed: int = 0):
    """The proposer for a model spec (see :data:`kbench_lib.generation.models.MODELS`)."""
    from ..generation.spec import is_language_model

    feedback = FeedbackOptions.from_value(feedback)
    if is_language_model(model):
        from ..generation import language_model

        return LanguageModelProposer(language_model(model, generation), feedback)
    if is_tuner(model):
        from .tuner import TunerProposer

        return TunerProposer.from_spec(model, backends, seed)
    return FixedProposer(get_model(model, backends, generation))
