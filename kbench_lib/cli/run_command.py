"""``kbench run``: a model's candidates over a folder of problems (or a corpus's own tasks), every
verdict recorded; a plain batch (locally or on Ray) or a search strategy."""
from __future__ import annotations

import argparse
import json
import sys

from ..core.candidates import BACKENDS
from .options import REPO, add_judge_args, flag_policy_arg, judge_options, problems_path_refused, selected_problems


def add_parser(sub) -> None:
    """``kbench run``: a model's candidates over a folder of problems, every verdict recorded."""
    p = sub.add_parser("run", help="judge a model's candidates on a folder of problems, recording every verdict")
    p.add_argument("problems", nargs="?", default=str(REPO / "problems"), help="a folder of problems (a corpus model brings its own)")
    p.add_argument("--model", default="reference",
                   help="reference, torch-compile, eager (the problem's own Model: a clock control), folder:PATH, tune[:PATH] (offline autotuner of the solutions), "
                        "cuda-l1:PATH (a published corpus: each row's kernel judged against its own task, its claim recorded), "
                        "openai[ENV]:MODEL[@BASE_URL], anthropic[ENV]:MODEL[@BASE_URL] or hf:PATH")
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="the backend a language model is asked for (default: cuda on a GPU, cpp on the CPU); offline models keep only its candidates")
    g = p.add_argument_group("language models")
    g.add_argument("--samples", type=int, default=1, help="candidates asked for per problem (default 1)")
    g.add_argument("--temperature", type=_float_or_none, default=0.7, help="sampling temperature, or none to send none (default 0.7)")
    g.add_argument("--max-tokens", type=int, default=8192, help="longest answer, in tokens (default 8192)")
    g.add_argument("--sample-seed", type=int, default=None, help="send seed + i with sample i (servers that honour it reproduce samples)")
    g.add_argument("--cache", choices=["live", "replay", "refresh"], default="live",
                   help="live: use stored answers, ask for the rest; replay: never call a model; refresh: ask again (default live)")
    g.add_argument("--cache-path", default=None, help="the response cache (default results/cache/generation.sqlite)")
    g.add_argument("--hardware", default="auto", help="the prompt's hardware block: auto (the judging GPU), none, or a roofline device (h100-sxm, a100 ...)")
    g.add_argument("--no-shapes", action="store_true", help="leave the configurations (variants) out of the prompt")
    g.add_argument("--no-example", action="store_true", help="leave the worked example out of the prompt")
    g.add_argument("--concurrency", type=int, default=None, help="requests in flight at once (default: 8 OpenAI-compatible, 4 Anthropic, 1 hf)")
    g.add_argument("--queue-size", type=int, default=None,
                   help="answers that may wait for the judge before requests pause (default: twice the concurrency)")
    g.add_argument("--request-timeout", type=float, default=600.0, help="seconds per request attempt (default 600)")
    g.add_argument("--max-retries", type=int, default=8, help="retries on 429, 5xx, timeouts and connection errors (default 8)")
    p.add_argument("--run-id", default=None)
    p.add_argument("--runs-root", default=None)
    p.add_argument("--filter", nargs="*", default=None, help="keep problems whose key contains any of these")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--build-jobs", type=int, default=None, help="build this many candidates in parallel while judging goes on (default: on a GPU "
                   "every core but two, at most 16; on the CPU one at a time)")
    p.add_argument("--gpus", default=None, help="all or N: spread the samples over the first N local GPUs, a problem's on one GPU until it is 4 samples ahead of "
                   "another, an idle GPU taking waiting samples from the busiest, each GPU judged by a process of its own (KBENCH_LANE_PROCESSES=0: threads of "
                   "this one) with its workers on cores of their own (default: the one device); "
                   "with --ray, at most N of the cluster's GPUs (default all)")
    p.add_argument("--overlap", action="store_true",
                   help="start each device's next candidate (its start and correctness calls, never its timed calls) while the judge "
                        "checks the previous one (default: one at a time; no gain measured on the H100, twice the /dev/shm peak)")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="judge on a Ray cluster: auto (a running cluster), HOST:PORT or ray://...; alone, RAY_ADDRESS or a cluster "
                        "started on this machine, else a new local one (docs/CLUSTER.md)")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--trust", type=flag_policy_arg, default="strict", metavar="{strict,no-cheat}",
                   help="which flags make a correct result untrusted in the printed count: strict (any flag; default) or no-cheat "
                        "(cheat-class flags only; hazards and shortcuts count); records keep every flag (docs/THREAT_MODEL.md)")
    _add_strategy_args(p)
    add_judge_args(p)
    p.set_defaults(fn=command, refused=refused)


def _add_strategy_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("search strategies (kbench_lib.strategies)")
    g.add_argument("--strategy", choices=["single", "refine", "evolve", "verify"], default="single",
                   help="single: --samples independent samples; refine: --turns with judge feedback; evolve: translation then "
                        "generations of mutations and crossovers; verify: single with LLM soft verifiers (default single)")
    g.add_argument("--verify", nargs="*", default=None, choices=["compile", "memory", "numerics", "culprit"],
                   help="soft verifiers checking each candidate before the judge (alone: compile memory numerics)")
    g.add_argument("--verifier-model", default=None, help="the verifiers' language model (default: --model)")
    g.add_argument("--ground-truth", action="store_true", help="judge candidates a verifier rejected too (measures the verifiers)")
    g.add_argument("--feedback", choices=["profile", "execution", "none"], default="profile",
                   help="what refinement and evolution prompts show of the judge's verdict (default profile: execution and profiler)")
    g.add_argument("--turns", type=int, default=None, help="refine: turns per chain (default 3)")
    g.add_argument("--chains", type=int, default=None, help="refine: independent chains per problem (default 1)")
    g.add_argument("--stop-when-correct", action="store_true", help="refine: end a chain at its first correct, unflagged result")
    g.add_argument("--population", type=int, default=None, help="evolve: translation samples and elite size (default 4)")
    g.add_argument("--generations", type=int, default=None, help="evolve: generations after translation (default 3)")
    g.add_argument("--proposals", type=int, default=None, help="evolve: proposals per generation (default 4)")
    g.add_argument("--translate-turns", type=int, default=None, help="evolve: error-fixing rounds before a first correct kernel (default 2)")
    g.add_argument("--crossover", type=float, default=None, help="evolve: chance a proposal is a crossover of two parents (default 0.3)")
    g.add_argument("--search-seed", type=int, default=None, help="evolve: seed of parent selection and of the tuner's moves (default 0)")
    g.add_argument("--budget-proposals", type=int, default=None, help="at most this many proposals per problem")
    g.add_argument("--budget-judgements", type=int, default=None, help="at most this many judged candidates per problem")
    g.add_argument("--budget-wall", type=float, default=None, help="at most this many seconds of search per problem")
    g.add_argument("--parallel-problems", type=int, default=1, help="problems searched at once (language-model latency overlaps; default 1)")


def command(a) -> int:
    from ..cluster.errors import ClusterError
    from ..generation.errors import MissingExtra
    from ..generation.spec import SpecError
    from ..generation.models import ModelUnavailable
    from ..batch.runner import RUNS_ROOT, new_run_id, run_batch
    from ..generation.corpus import is_corpus

    backends = (a.backend,) if a.backend else None
    run_id = a.run_id or new_run_id()
    problems = _corpus_problems(a, run_id, RUNS_ROOT) if is_corpus(a.model) else selected_problems(a, "run")
    if problems is None:
        return 2
    try:
        if _searches(a):
            if a.ray is not None:  # a search decides from each verdict in turn: it runs here, not on the cluster
                print("kbench run: --ray runs plain batches; a search strategy (--strategy, --verify, --model tune) runs on this "
                      "machine: leave out --ray", file=sys.stderr)
                return 2
            try:
                rows = _run_strategy(a, problems, run_id, backends)
            except ValueError as e:  # a combination run_strategy refuses before it starts (a problem's own errors are its records)
                print(f"kbench run: {e}", file=sys.stderr)
                return 2
        else:
            run_id, rows = run_batch(problems, a.model, run_id=run_id, runs_root=a.runs_root or RUNS_ROOT, opts=judge_options(a),
                                     progress=not a.quiet, prebuild_jobs=a.build_jobs, backends=backends, generation=_generation_options(a),
                                     gpus=a.gpus, ray=a.ray, overlap=a.overlap)
    except (ModelUnavailable, MissingExtra, SpecError, ClusterError) as e:
        print(f"kbench run: {e}", file=sys.stderr)
        print(f"kbench run: verdicts already recorded are kept; --run-id {run_id} resumes this run", file=sys.stderr)
        return 4
    from ..scoring.flags import trusted

    n_ok = sum(trusted(r["correct"], r["flags"], a.trust) for r in rows)
    words = "correct and unflagged" if a.trust == "strict" else f"trusted under {a.trust} (correct, no cheat flag)"
    print(f"run {run_id}: {len(rows)} verdicts written, {n_ok} {words}")
    from ..generation.models import NOTES, is_control

    if is_control(a.model) and rows:  # its flags are expected: say why before a reader takes it for a failed model
        print(f"  {NOTES[a.model]}")
    if a.json:
        print(json.dumps({"run_id": run_id, "n": len(rows), "trusted": n_ok, "trust": a.trust}))
    return 0


def refused(a) -> str | None:
    """Why ``kbench run`` refuses its arguments (one line), or None: a model that names nothing, a
    corpus that cannot be read, a problem path that does not exist."""
    from ..generation import corpus
    from ..generation.models import unknown_model

    if corpus.is_corpus(a.model):
        return corpus.spec_error(a.model)
    why = None if _searches(a) else unknown_model(a.model)
    if why:  # the tuner is a search (kbench_lib.strategies), not one of the registry's models
        why += ", or tune[:PATH] (the offline autotuner)"
    return why or problems_path_refused(a)


def _searches(a) -> bool:
    """Whether ``kbench run`` runs a search strategy (kbench_lib.strategies) rather than a plain batch."""
    from ..generation.spec import is_tuner

    return a.strategy != "single" or a.verify is not None or is_tuner(a.model)


def _corpus_problems(a, run_id: str, runs_root) -> list | None:
    """A corpus model's own problems (each row's task, written under the run's folder), kept by
    ``--filter`` and ``--limit``; None after a one-line error (an unknown format, a missing file)."""
    from pathlib import Path

    from ..generation.corpus import CorpusError, corpus_problems
    from ..suite.problems import select

    try:
        problems = corpus_problems(a.model, Path(a.runs_root or runs_root) / run_id / "corpus")
    except CorpusError as e:
        print(f"kbench run: {e}", file=sys.stderr)
        return None
    return select(problems, a.filter, a.limit)


def _float_or_none(text: str) -> float | None:
    return None if text.lower() == "none" else float(text)


def _generation_options(a) -> dict | None:
    """A language model's options from ``kbench run``'s flags (None for offline models)."""
    from ..generation.runs import generation_options
    from ..generation.spec import is_language_model

    if not is_language_model(a.model):
        return None
    return generation_options(a.device, samples=a.samples, temperature=a.temperature, max_tokens=a.max_tokens, seed=a.sample_seed,
                              backend=a.backend, hardware=a.hardware, shapes=not a.no_shapes, example=not a.no_example,
                              precision=a.precision, small=a.small, cache_mode=a.cache, cache_path=a.cache_path,
                              concurrency=a.concurrency, queue_size=a.queue_size, timeout_s=a.request_timeout, max_retries=a.max_retries,
                              progress=not a.quiet)


def _run_strategy(a, problems: list, run_id: str, backends) -> list[dict]:
    from ..batch.runner import RUNS_ROOT
    from ..strategies import DEFAULT_VERIFIERS, run_strategy, strategy_params

    wanted = {"samples": a.samples, "turns": a.turns, "chains": a.chains, "stop_when_correct": a.stop_when_correct or None,
              "population": a.population, "generations": a.generations, "proposals": a.proposals, "translate_turns": a.translate_turns,
              "crossover": a.crossover, "seed": a.search_seed}
    if a.gpus not in (None, "1"):
        print("kbench run: a search judges on one device; --gpus applies to plain batches only", file=sys.stderr)
    takes = strategy_params(a.strategy)
    params = {k: v for k, v in wanted.items() if k in takes and v is not None}
    generation = _generation_options(a)
    if generation is not None and "samples" in params:
        generation["samples"] = 1  # the strategy asks for each sample itself
    budget = {"proposals": a.budget_proposals, "judgements": a.budget_judgements, "wall_s": a.budget_wall}
    verify = None if a.verify is None else (a.verify or list(DEFAULT_VERIFIERS))
    _, rows = run_strategy(problems, a.model, a.strategy, params=params, budget=budget, verify=verify,
                           verifier_model=a.verifier_model, ground_truth=a.ground_truth, feedback=a.feedback, run_id=run_id,
                           runs_root=a.runs_root or RUNS_ROOT, opts=judge_options(a), generation=generation, backends=backends,
                           cache_path=a.cache_path, cache_mode=a.cache, build_jobs=a.build_jobs, concurrency=a.parallel_problems,
                           progress=not a.quiet)
    return rows
