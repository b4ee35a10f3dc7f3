"""The ``kbench`` command line.

    kbench eval PROBLEM_FILE CANDIDATE_FILE [--backend ...] [--device ...] [--precision ...] [--json]
    kbench run  PROBLEMS [--model SPEC] [--samples K] [--cache live|replay|refresh] [--run-id ID] [--ray [ADDRESS|auto]] ...
                [--strategy single|refine|evolve|verify] [--verify ...] [--turns T] [--generations G] [--budget-* N]
    kbench lint PATH [--small] [--device ...] [--json]
    kbench index [PROBLEMS] [--out problems/index.csv]

``eval`` exits 0 whenever a verdict was reached (correct or not) and non-zero only when the judge
itself could not run; with ``--json`` the last line on stdout is the verdict as one JSON object.
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import os
import sys
import time
from pathlib import Path

from .core.candidates import BACKENDS
from .measure.trials import BUDGET_S

REPO = Path(__file__).resolve().parent.parent


def _judge_options(a):
    from .judging.pipeline import JudgeOptions

    return JudgeOptions(
        device=a.device, precision=a.precision, small=a.small, n_seeds=a.seeds, seed=a.seed,
        build_timeout_s=a.build_timeout, run_timeout_s=a.run_timeout, idle_timeout_s=a.idle_timeout, timing=not a.no_timing,
        timing_budget_s=a.timing_budget, compile_baseline=a.compile_baseline, time_variants=a.time_variants,
        protocol=a.protocol, reference_store=False if a.no_reference_store else None,
    )


def _protocol(name: str) -> str:
    """argparse type of ``--protocol``: a one-line error listing the choices for any other name."""
    from .scoring.protocols import UnknownProtocol, check

    try:
        return check(name)
    except UnknownProtocol as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _flag_policy(name: str) -> str:
    """argparse type of ``--trust``: a one-line error listing the choices for any other name."""
    from .scoring.flags import UnknownFlagPolicy, check_policy

    try:
        return check_policy(name)
    except UnknownFlagPolicy as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _add_judge_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help="cuda, cpu or auto (default: cuda when available)")
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    size = p.add_mutually_exclusive_group()
    size.add_argument("--small", dest="small", action="store_true", default=None, help="use SMALL configurations (default on the CPU)")
    size.add_argument("--full", dest="small", action="store_false", help="use full-size configurations (default on a GPU)")
    p.add_argument("--seeds", type=int, default=5, help="fresh input sets for the default configuration (default 5)")
    p.add_argument("--seed", type=int, default=None, help="base seed (default: drawn fresh each time)")
    p.add_argument("--build-timeout", type=float, default=300.0, help="seconds (default 300)")
    p.add_argument("--run-timeout", type=float, default=180.0, help="seconds per candidate (default 180)")
    p.add_argument("--idle-timeout", type=float, default=10.0,
                   help="end a candidate whose processes use no CPU time for this many seconds: a sleeping or blocked hang "
                        "(default 10; 0: only --run-timeout)")
    p.add_argument("--timing-budget", type=float, default=BUDGET_S, help=f"seconds of timed trials at most (default {BUDGET_S:g})")
    p.add_argument("--no-timing", action="store_true", help="no timed calls and no speedup; correctness and every guard as with timing (the forward is still profiled once)")
    p.add_argument("--compile-baseline", action="store_true", help="measure torch.compile when no stored baseline exists")
    p.add_argument("--time-variants", action="store_true",
                   help="also time the candidate and the eager baseline on every variant (per-variant speedups; costs a timing run per variant)")
    p.add_argument("--no-reference-store", action="store_true",
                   help="measure the eager baseline and the reference's profile again rather than read them from the reference store "
                        "(on a GPU, $KBENCH_REFERENCE_STORE or $KBENCH_CACHE/reference; docs/JUDGING.md)")
    p.add_argument("--protocol", type=_protocol, default="kbench", metavar="{kbench,kernelbench,kernelbench-v0,cuda-l1}",
                   help="which configurations at which tolerance decide correct: kbench (every configuration in training mode; "
                        "default), kernelbench (the declared shape, fp32 1e-4), kernelbench-v0 (the declared shape, 1e-2 for every "
                        "precision), cuda-l1 (the declared shape in eval mode under no_grad, 1e-2; timed in eval mode); every "
                        "configuration is checked and recorded whatever it is (docs/PROTOCOLS.md)")


def cmd_eval(a) -> int:
    from .core.candidates import load_candidate
    from .judging.pipeline import JudgeError, judge
    from .suite.problems import ProblemError, resolve

    try:
        problem = resolve(a.problem, REPO / "problems")
        candidate = load_candidate(a.candidate, a.backend)
    except (ProblemError, OSError, ValueError) as e:
        print(f"kbench eval: {e}", file=sys.stderr)
        return 2
    try:
        verdict = judge(problem, candidate, _judge_options(a))
    except JudgeError as e:
        print(f"kbench eval: the judge could not run: {e}", file=sys.stderr)
        return 3
    from .reports.verdict_text import verdict_lines
    from .scoring.flags import classes

    d = verdict.to_dict()
    d["timing"] = _timing_kind(verdict)
    d["flag_classes"] = classes(verdict.flags)  # cheat, hazard or shortcut, one per flag (docs/THREAT_MODEL.md)
    if a.json:
        print(json.dumps(d, default=str))
    else:
        for line in verdict_lines(verdict, problem, candidate, d["timing"]):
            print(line)
    return 0


def _timing_kind(verdict) -> str:
    """Where the verdict's times come from (the rule of :func:`kbench_lib.scoring.metrics.timing_kind`)."""
    import pandas as pd

    from .scoring.metrics import timing_kind

    row = {"device": verdict.device, "small": verdict.small, "backend": verdict.backend}
    return str(timing_kind(pd.DataFrame([row])).iloc[0])


def _selected_problems(a, verb: str) -> list | None:
    """The problems under ``a.problems`` kept by ``--filter`` and ``--limit``; malformed files are
    reported and skipped. None after a one-line error: a path that does not exist, or no problem
    left to run."""
    from pathlib import Path

    from .suite.problems import discover_with_errors, select

    if not Path(a.problems).exists():
        print(f"kbench {verb}: no such problem folder or file: {a.problems}", file=sys.stderr)
        return None
    problems, errors = discover_with_errors(a.problems)
    for path, err in errors:
        print(f"kbench {verb}: skipping malformed problem {path}: {err}", file=sys.stderr)
    kept = select(problems, a.filter, a.limit)
    if not kept:
        which = f" matches --filter {' '.join(a.filter)}" if a.filter and problems else ""
        print(f"kbench {verb}: no problem under {a.problems}{which}", file=sys.stderr)
        return None
    return kept


def _is_corpus(model: str) -> bool:
    from .generation.corpus import is_corpus

    return is_corpus(model)


def _corpus_problems(a, run_id: str, runs_root) -> list | None:
    """A corpus model's own problems (each row's task, written under the run's folder), kept by
    ``--filter`` and ``--limit``; None after a one-line error (an unknown format, a missing file)."""
    from pathlib import Path

    from .generation.corpus import CorpusError, corpus_problems
    from .suite.problems import select

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
    from .generation.runs import generation_options
    from .generation.spec import is_language_model

    if not is_language_model(a.model):
        return None
    return generation_options(a.device, samples=a.samples, temperature=a.temperature, max_tokens=a.max_tokens, seed=a.sample_seed,
                              backend=a.backend, hardware=a.hardware, shapes=not a.no_shapes, example=not a.no_example,
                              precision=a.precision, small=a.small, cache_mode=a.cache, cache_path=a.cache_path,
                              concurrency=a.concurrency, queue_size=a.queue_size, timeout_s=a.request_timeout, max_retries=a.max_retries,
                              progress=not a.quiet)


def cmd_run(a) -> int:
    from .cluster.errors import ClusterError
    from .generation.errors import MissingExtra
    from .generation.spec import SpecError
    from .generation.models import ModelUnavailable
    from .batch.runner import RUNS_ROOT, new_run_id, run_batch

    from .generation.models import unknown_model

    why = None if _searches(a) else unknown_model(a.model)
    if why:  # before anything is read or started: one line
        print(f"kbench run: {why}", file=sys.stderr)
        return 2
    backends = (a.backend,) if a.backend else None
    run_id = a.run_id or new_run_id()
    problems = _corpus_problems(a, run_id, RUNS_ROOT) if _is_corpus(a.model) else _selected_problems(a, "run")
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
            run_id, rows = run_batch(problems, a.model, run_id=run_id, runs_root=a.runs_root or RUNS_ROOT, opts=_judge_options(a),
                                     progress=not a.quiet, prebuild_jobs=a.build_jobs, backends=backends, generation=_generation_options(a),
                                     gpus=a.gpus, ray=a.ray, overlap=a.overlap)
    except (ModelUnavailable, MissingExtra, SpecError, ClusterError) as e:
        print(f"kbench run: {e}", file=sys.stderr)
        print(f"kbench run: verdicts already recorded are kept; --run-id {run_id} resumes this run", file=sys.stderr)
        return 4
    from .scoring.flags import trusted

    n_ok = sum(trusted(r["correct"], r["flags"], a.trust) for r in rows)
    words = "correct and unflagged" if a.trust == "strict" else f"trusted under {a.trust} (correct, no cheat flag)"
    print(f"run {run_id}: {len(rows)} verdicts written, {n_ok} {words}")
    from .generation.models import NOTES, is_control

    if is_control(a.model) and rows:  # its flags are expected: say why before a reader takes it for a failed model
        print(f"  {NOTES[a.model]}")
    if a.json:
        print(json.dumps({"run_id": run_id, "n": len(rows), "trusted": n_ok, "trust": a.trust}))
    return 0


def _searches(a) -> bool:
    """Whether ``kbench run`` runs a search strategy (kbench_lib.strategies) rather than a plain batch."""
    from .strategies.proposers import is_tuner

    return a.strategy != "single" or a.verify is not None or is_tuner(a.model)


def _run_strategy(a, problems: list, run_id: str, backends) -> list[dict]:
    from .batch.runner import RUNS_ROOT
    from .strategies import DEFAULT_VERIFIERS, run_strategy, strategy_params

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
                           runs_root=a.runs_root or RUNS_ROOT, opts=_judge_options(a), generation=generation, backends=backends,
                           cache_path=a.cache_path, cache_mode=a.cache, build_jobs=a.build_jobs, concurrency=a.parallel_problems,
                           progress=not a.quiet)
    return rows


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


def cmd_lint(a) -> int:
    from tqdm.auto import tqdm

    from .suite.lint import lint_problem, summarize
    from .suite.problems import discover_with_errors
    from .core.provenance import resolve_device

    device = resolve_device(a.device)
    small = a.small if a.small is not None else not device.startswith("cuda")
    problems, errors = discover_with_errors(a.path)
    if a.filter:
        problems = [p for p in problems if any(f in p.key for f in a.filter)]
    if a.resume and a.report and os.path.exists(a.report):
        with open(a.report) as f:
            done = {json.loads(line)["problem"] for line in f if line.strip()}
        problems = [p for p in problems if p.key not in done]
    reports = []
    for p in tqdm(problems, desc="lint", unit="problem", disable=a.quiet or a.json):
        started = time.monotonic()
        reports.append(lint_problem(p, device=device, small=small, require_extensions=not a.upstream, lowp=not a.no_lowp))
        if a.report:  # one line per problem as it is done: a run cut short still says what it saw
            one = summarize(reports[-1:])
            with open(a.report, "a") as f:
                f.write(json.dumps({"problem": p.key, "seconds": round(time.monotonic() - started, 2), "failed": one["failed"],
                                    "failures": one["failures"]}, default=str) + "\n")
    summary = summarize(reports)
    for path, err in errors:
        summary["total"] += 1
        summary["failed"] += 1
        summary["failures"].append({"problem": str(path), "config": "-", "check": "loads", "reason": str(err)})
    if not a.json:
        for problem, derived in summary["derived"].items():
            for d in derived:
                print(f"DERIVED {problem} [{d['config']}] {d['overrides']}")
        for problem, notes in summary["notes"].items():
            for note in notes:
                print(f"NOTE {problem}: {note}")
        for f in summary["failures"]:
            print(f"FAIL {f['problem']} [{f['config']}] {f['check']}: {f['reason']}")
        print(f"{summary['total']} problems, {summary['failed']} failed")
    else:
        print(json.dumps(summary, default=str))
    return 1 if summary["failed"] and a.strict else 0


def cmd_index(a) -> int:
    from .suite.roofline import write_index

    df = write_index(a.problems, a.out)
    print(f"wrote {len(df)} problems to {a.out}")
    return 0


def cmd_baselines(a) -> int:
    from .judging.baselines import sweep

    problems = _selected_problems(a, "baselines")
    if problems is None:
        return 2
    folder = sweep(problems, a.modes, a.device, a.precision, a.small, a.out, a.timeout, a.budget, progress=not a.quiet,
                   compile_jobs=a.compile_jobs)
    print(f"baselines in {folder}")
    return 0


def _add_eval_command(sub) -> None:
    """``kbench eval PROBLEM CANDIDATE``: one candidate judged."""
    p = sub.add_parser("eval", help="judge one candidate against one problem")
    p.add_argument("problem", help="a problem file, or a key under problems/ (level1/51_ReLU), as the lab takes")
    p.add_argument("candidate")
    p.add_argument("--backend", choices=BACKENDS, default=None, help="default: detected from the source")
    p.add_argument("--json", action="store_true")
    _add_judge_args(p)
    p.set_defaults(fn=cmd_eval)


def _add_run_command(sub) -> None:
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
    p.add_argument("--trust", type=_flag_policy, default="strict", metavar="{strict,no-cheat}",
                   help="which flags make a correct result untrusted in the printed count: strict (any flag; default) or no-cheat "
                        "(cheat-class flags only; hazards and shortcuts count); records keep every flag (docs/THREAT_MODEL.md)")
    _add_strategy_args(p)
    _add_judge_args(p)
    p.set_defaults(fn=cmd_run)


def cmd_audit(a) -> int:
    from . import workflows
    from .analysis import audit
    from .generation.corpus import CorpusError

    try:
        run_id, df, wall_s = workflows.audit(a.corpus, device=a.device, run_id=a.run_id, runs_root=a.runs_root, protocol=a.protocol,
                                             timing_budget_s=a.timing_budget, limit=a.limit, filters=a.filter, build_jobs=a.build_jobs,
                                             progress=not a.quiet)
    except CorpusError as e:
        print(f"kbench audit: {e}", file=sys.stderr)
        return 2
    made = audit.audit_outputs(df, a.corpus, a.out_dir, a.figures_dir, wall_s, a.protocol)
    summary = json.loads(made["summary"][0].read_text())
    print(f"audit {run_id}: {summary['kernels']} kernels ({summary['with_code']} with code) on {summary['device_name']} in {wall_s:.0f} s")
    print(f"  claimed mean {_num(summary['claimed_mean'])}x, median {_num(summary['claimed_median'])}x; reproduced under "
          f"{a.protocol} mean {_num(summary['reproduced_mean'])}x, median {_num(summary['reproduced_median'])}x "
          f"({summary['reproduced_n']} kernels correct and timed on a GPU)")
    print(f"  kbench fast_0 {_num(summary['kbench_fast_0_strict'])} / fast_1 {_num(summary['kbench_fast_1_strict'])} (strict), "
          f"{_num(summary['kbench_fast_0_no_cheat'])} / {_num(summary['kbench_fast_1_no_cheat'])} (no-cheat)")
    print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in summary["by_outcome"].items() if v))
    for files in made.values():
        for f in files:
            print(f"  wrote {f}")
    return 0


def _num(x) -> str:
    return "-" if x is None else f"{x:.3g}"


def _add_audit_command(sub) -> None:
    """``kbench audit CORPUS``: a published corpus judged once, its claims set beside what was measured."""
    from .core.paths import RUNS_ROOT

    p = sub.add_parser("audit", help="judge a published corpus (cuda-l1:PATH) once and set its claims beside the measured speed and kbench's verdict")
    p.add_argument("corpus", help="cuda-l1:PATH (CUDA-L1's release format)")
    p.add_argument("--device", default="auto")
    p.add_argument("--protocol", type=_protocol, default="cuda-l1", help="the corpus's own protocol (default cuda-l1); kbench's is read from the same records")
    p.add_argument("--run-id", default=None, help="a run to resume (default: a new one)")
    p.add_argument("--runs-root", default=str(RUNS_ROOT))
    p.add_argument("--timing-budget", type=float, default=BUDGET_S, help=f"seconds of timed trials at most per candidate (default {BUDGET_S:g})")
    p.add_argument("--build-jobs", type=int, default=None, help="build this many candidates in parallel while judging goes on (default: on a GPU "
                   "every core but two, at most 16; on the CPU one at a time)")
    p.add_argument("--filter", nargs="*", default=None, help="keep tasks whose key contains any of these")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--out-dir", default=str(REPO / "results" / "benchmarks"), help="the summary row and the per-kernel table go under <out-dir>/<device>/")
    p.add_argument("--figures-dir", default=str(REPO / "results" / "figures"), help="the figures go under <figures-dir>/<device>/")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(fn=cmd_audit)


def _add_lint_command(sub) -> None:
    """``kbench lint PATH``: problem files checked."""
    p = sub.add_parser("lint", help="validate problem files")
    p.add_argument("path")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--small", dest="small", action="store_true", default=None)
    size.add_argument("--full", dest="small", action="store_false")
    p.add_argument("--device", default="auto")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--upstream", action="store_true", help="plain KernelBench files: do not require kbench's extensions")
    p.add_argument("--no-lowp", action="store_true", help="skip the bf16/fp16 conditioning report")
    p.add_argument("--strict", action="store_true", help="exit 1 when any problem fails")
    p.add_argument("--report", default=None, help="append one JSON line per problem to this file as each is done")
    p.add_argument("--resume", action="store_true", help="skip problems the --report file already has (a cut-off lint goes on)")
    p.add_argument("--filter", nargs="*", default=None, help="keep problems whose key contains any of these")
    p.set_defaults(fn=cmd_lint)


def _add_baselines_command(sub) -> None:
    """``kbench baselines``: eager, compile and CUDA-graph timings of every problem (resumable)."""
    p = sub.add_parser("baselines", help="time every problem in eager, compile and cudagraph modes (resumable)")
    p.add_argument("problems", nargs="?", default=str(REPO / "problems"))
    p.add_argument("--modes", nargs="+", default=["eager", "compile", "cudagraph"], choices=["eager", "compile", "cudagraph"])
    p.add_argument("--device", default="auto")
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    size = p.add_mutually_exclusive_group()
    size.add_argument("--small", dest="small", action="store_true", default=None)
    size.add_argument("--full", dest="small", action="store_false")
    p.add_argument("--out", default=None, help="root folder (default results/baselines); a folder per device below it")
    p.add_argument("--compile-jobs", type=int, default=0, help="compile this many problems at once before timing (default: one at a time)")
    p.add_argument("--filter", nargs="*", default=None)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per (problem, mode)")
    p.add_argument("--budget", type=float, default=5.0, help="seconds of timed trials per (problem, mode)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(fn=cmd_baselines)


def _add_index_command(sub) -> None:
    """``kbench index``: the problem index (tags, variants, FLOPs, bytes)."""
    p = sub.add_parser("index", help="write the problem index (tags, variants, FLOPs, bytes)")
    p.add_argument("problems", nargs="?", default=str(REPO / "problems"))
    p.add_argument("--out", default=str(REPO / "problems" / "index.csv"))
    p.set_defaults(fn=cmd_index)


def cmd_serve(a) -> int:
    from .service import client, daemon
    from .service.key import service_key

    if a.status or a.stop:
        answer = client.request({"stop": True} if a.stop else {"status": True})
        if answer is None:
            print("kbench serve: no service runs for this environment")
            return 1
        print(("stopped: " if a.stop else "") + json.dumps(answer))
        return 0
    import kbench_lib.batch.runner  # noqa: F401 - what every command of the service needs, imported before the first
    import kbench_lib.workflows  # noqa: F401

    return daemon.serve(a.key or service_key(), lambda argv: main(argv, forward=False), a.idle_timeout, on_ready=_start_servers)


def _start_servers() -> None:
    """The service's fork servers for this machine's default device, started while it waits for its first command."""
    from .batch import runner
    from .judging.pipeline import JudgeOptions

    runner.start_servers(runner.batch_devices(JudgeOptions(), 1), wait=False)


def _add_serve_command(sub) -> None:
    from .service.daemon import DEFAULT_IDLE_S

    p = sub.add_parser("serve", help="run the judge service that kbench run, eval and audit hand their commands to (docs/SERVICE.md)")
    p.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_S,
                   help=f"end after this many seconds without a command (default {DEFAULT_IDLE_S:g})")
    p.add_argument("--status", action="store_true", help="print the running service's pid, age and commands served")
    p.add_argument("--stop", action="store_true", help="stop the running service")
    p.add_argument("--key", default=None, help=argparse.SUPPRESS)  # the key of the command that started it
    p.set_defaults(fn=cmd_serve)


FORWARDED = ("eval", "run", "audit")  # the commands the judge service runs (docs/SERVICE.md)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    ap = argparse.ArgumentParser(prog="kbench", description="Build, judge and record machine-written GPU kernels.")
    ap.add_argument("--version", action="version", version=f"kbench {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for add in (_add_eval_command, _add_run_command, _add_audit_command, _add_lint_command, _add_baselines_command, _add_index_command,
                _add_serve_command):
        add(sub)
    return ap


def main(argv: list[str] | None = None, forward: bool = True) -> int:
    """``kbench``: the command ``argv`` (default ``sys.argv[1:]``). ``eval``, ``run`` and ``audit`` are
    handed to the judge service where ``forward`` (docs/SERVICE.md), after their arguments are
    read here (an error in them is reported at once); ``--ray`` batches run here."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    if forward and args.cmd in FORWARDED and getattr(args, "ray", None) is None:
        from .service.client import forward as to_service

        code = to_service(argv)
        if code is not None:
            return code
    if not faulthandler.is_enabled():  # a crash of the judge itself (not a candidate's) shows every thread's stack
        faulthandler.enable(all_threads=True)
    try:
        return args.fn(args)
    except KeyboardInterrupt:  # the verdicts recorded so far are kept; the same --run-id goes on from them
        print("kbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
