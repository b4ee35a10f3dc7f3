"""The plan of a judgement's cases: which configurations, over which input sets, checked or timed
(:func:`plan_cases`), how the timed ones group (:func:`timed_groups`), and how a plan is cut to what
the judge can hold (:func:`fit_checked_sets`) or to training mode (:func:`in_training_mode`). Each
set is named by its seeds alone: the judge and the candidate's worker draw it from them, each on
its own side."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from ..isolation.worker.timed import timing_groups
from ..measure.tensors import nbytes
from ..core.provenance import host_memory
from ..suite.problems import Config, Problem, ProblemError, eval_config
from ..suite.reference import Case

VARIANT_TIMING_SETS = 3  # never-seen input sets per variant for its timed rotation (``time_variants``)


@dataclass(frozen=True)
class CaseSpec:
    config: Config
    init_seed: int
    input_seed: int
    timed: bool


def plan_cases(problem: Problem, base: int, small: bool, n_seeds: int, variant_seeds: int, timing_sets: int,
               device: str | None = None, variant_timing_sets: int = 0, eval_sets: int = 0,
               timed_mode: str = "train") -> list[CaseSpec]:
    """The default configuration with ``n_seeds`` input sets over one model, the default's eval
    configuration (:func:`eval_config`) on the first ``eval_sets`` of the default's seeds, every
    variant with ``variant_seeds`` sets, ``timing_sets`` more default sets that only the timed
    calls see (in ``timed_mode``: the eval configuration's where it is "eval"), then
    ``variant_timing_sets`` more sets of each variant (same model as its checked sets) for timing
    the variants (none without default timing sets: the first timed group is the default's, for the
    worker and the judge alike). Timed sets come last, the default configuration's first. The
    configurations every protocol decides by (the default and its eval configuration) come before
    the variants: a variant whose failure leaves the CUDA context unusable stops the worker's
    checks, and what it stops is then only what no protocol but kbench's reads."""
    configs = problem.configs(small=small, device=device)

    def sets(v: int, cfg: Config, first: int, n: int, timed: bool) -> list[CaseSpec]:
        init = base + 104729 * v
        return [CaseSpec(cfg, init, init + 1 + 7919 * k, timed) for k in range(first, first + n)]

    out = sets(0, configs[0], 0, n_seeds, False)
    out += sets(0, eval_config(configs[0]), 0, min(eval_sets, n_seeds), False)
    for v, cfg in enumerate(configs[1:], start=1):
        out += sets(v, cfg, 0, variant_seeds, False)
    out += sets(0, eval_config(configs[0]) if timed_mode == "eval" else configs[0], n_seeds, timing_sets, True)
    if timing_sets <= 0:  # variants are timed only beside the default configuration, which comes first
        return out
    for v, cfg in enumerate(configs[1:], start=1):
        out += sets(v, cfg, variant_seeds, variant_timing_sets, True)
    return out


def timed_groups(specs: list[CaseSpec]) -> list[tuple[str, list[int], list[int]]]:
    """(configuration name, indices of its timed sets, indices of its checked sets) for every
    configuration with timed sets, the default configuration first: what the worker times, and
    what the judge re-checks and times the baseline on (the worker's own rule, on the same plan)."""
    return timing_groups([{"config": s.config.name, "timed": s.timed} for s in specs])


# what a task's expected outputs over its checked sets may take: the judge keeps them (on the GPU, or
# in host memory where they do not fit there) and the candidate's worker hands back as much
HOLD_SHARE = 0.25


def fit_checked_sets(problem: Problem, first: Case, specs: list[CaseSpec]) -> tuple[list[CaseSpec], str | None]:
    """The plan, with as many checked sets as the judge can hold: a task's expected outputs over its
    checked sets (the first set's size times their count; variants are never larger) may take
    :data:`HOLD_SHARE` of this machine's memory. Judged with more, the judge's process and the
    worker's result files would exhaust the host (a task's 4 GiB output over ten input sets takes a
    third of a 125 GiB host). Over the share, each configuration keeps a prefix of its checked sets,
    the largest count cut first, down to two of the default's (what the degenerate-task check
    compares) and one of every other configuration; the note says how many were checked. Raises
    :class:`ProblemError` (its candidates recorded as ``judge_error``, the batch going on) where even
    that is over the share."""
    per_set = nbytes([first.expected, first.expected_input_grads, list(first.expected_param_grads.values())])
    limit = int(HOLD_SHARE * host_memory())
    counts = Counter(s.config.name for s in specs if not s.timed)
    total = sum(counts.values())
    if per_set * max(1, total) <= limit:
        return specs, None
    floor = {name: 2 if i == 0 else 1 for i, name in enumerate(counts)}
    keep = dict(counts)
    while per_set * sum(keep.values()) > limit:
        name = max((n for n in keep if keep[n] > floor[n]), key=lambda n: keep[n] - floor[n], default=None)
        if name is None:
            raise ProblemError(f"{problem.key}: its outputs take {_size(per_set)} per input set, more than the judge holds "
                               f"over {sum(keep.values())} checked sets on this machine ({_size(limit)}, {HOLD_SHARE:g} of its memory): not judged")
        keep[name] -= 1
    seen: Counter = Counter()
    fitted = []
    for s in specs:
        if not s.timed:
            seen[s.config.name] += 1
            if seen[s.config.name] > keep[s.config.name]:
                continue
        fitted.append(s)
    kept = sum(keep.values())
    return fitted, (f"checked on {kept} of {total} input sets: its outputs take {_size(per_set)} per set, and the judge "
                    f"holds {_size(limit)} of them on this machine ({HOLD_SHARE:g} of its memory)")


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.2f} MiB"


def in_training_mode(specs: list[CaseSpec]) -> list[CaseSpec]:
    """The plan without its eval configuration: its checked sets left out, its timed sets run in
    training mode (the reference failed in eval mode)."""
    out = []
    for x in specs:
        if x.config.mode != "eval":
            out.append(x)
        elif x.timed:
            out.append(replace(x, config=Config(x.config.model_name, dict(x.config.overrides), x.config.derived)))
    return out
