"""Search strategies: how a model is used to find kernels, not only which model.

======== ===================================================================================
single   k independent samples per problem (:mod:`.single`; pass@k, fast_p@k estimated without
         bias in :mod:`kbench_lib.reports.search_metrics`)
refine   T turns per chain, each prompt carrying the previous candidate and the judge's feedback,
         with or without the profile (:mod:`.refine`, :mod:`.feedback`)
evolve   robust-kbench's translation phase, then generations of mutations and crossovers of the
         best trusted kernels, selected on speedup (:mod:`.evolve`)
verify   single with the compile, memory and numerics soft verifiers; any strategy takes
         verifiers (``verify=[...]``, :mod:`.verifiers`)
======== ===================================================================================

Data flows one way: a strategy asks its :class:`~.search.Search` for proposals; the proposer (a
language model, or the offline autotuner :mod:`.tuner`) makes them; verifiers may reject them; the
judge judges the rest; every proposal becomes a record (proposal id, parents, operation, turn,
verifier decisions, tokens); the strategy decides its next step from the observations
(:mod:`.observations`), which also make a search replayable from the response cache.
"""
from .feedback import PRESETS as FEEDBACK_PRESETS
from .feedback import FeedbackOptions, feedback_text
from .run import DEFAULT_VERIFIERS, NAMES, STRATEGIES, run_strategy, strategy_params
from .search import Attempt, Budget, Request, Search
from .tuner import TunerProposer, apply_config, find_knobs
from .verifiers import VERIFIERS, make_verifiers

__all__ = [
    "FEEDBACK_PRESETS", "FeedbackOptions", "feedback_text", "DEFAULT_VERIFIERS", "NAMES", "STRATEGIES", "run_strategy",
    "strategy_params", "Attempt", "Budget", "Request", "Search", "TunerProposer", "apply_config", "find_knobs", "VERIFIERS",
    "make_verifiers",
]
