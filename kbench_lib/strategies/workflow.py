"""What ``notebooks/03_strategies.ipynb`` and ``benchmarks/evolve_solutions.py`` call: a strategy
over selected problems, the tables and the figures of its records."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..reports import search_metrics, search_plots
from ..generation.runs import generation_options, select
from ..generation.spec import is_language_model
from ..judging.pipeline import JudgeOptions
from ..scoring.metrics import kernel_timed, times_a_kernel, trusted
from ..core.provenance import resolve_device
from ..scoring.records import read_records
from ..batch.runner import RUNS_ROOT, new_run_id
from ..workflows import _save, runnable_backends
from ..generation.spec import is_tuner
from .run import run_strategy
from .tuner import TunerProposer


def tunable_problems(problems, device: str) -> list:
    """The problems whose seed solution the tuner can run on ``device`` (Triton and C++ on a CPU)."""
    tuner = TunerProposer(backends=runnable_backends(device))
    return [p for p in problems if tuner.covers(p)]


def search(strategy: str = "evolve", model: str = "tune", *, problems_dir=None, levels=None, filters=None, limit: int | None = None,
           device: str = "auto", small: bool | None = None, precision: str = "fp32", seeds: int = 5, timing_budget_s: float = 1.0,
           params: dict | None = None, budget: dict | None = None, verify=None, verifier_model: str | None = None,
           ground_truth: bool = False, feedback: str = "profile", run_id: str | None = None, runs_root=None, cache_mode: str = "live",
           cache_path: str | None = None, build_jobs: int | None = None, concurrency: int = 1, **generation) -> tuple[str, pd.DataFrame]:
    """Runs ``strategy`` with ``model`` on the selected problems (for ``tune``: those with a seed
    solution runnable here); returns the run id and its records."""
    device = resolve_device(device)
    root = Path(runs_root or RUNS_ROOT)
    run_id = run_id or new_run_id(strategy)
    problems = select(problems_dir, levels, filters)
    backends = runnable_backends(device)
    if is_tuner(model):
        problems = tunable_problems(problems, device)
    problems = problems[:limit] if limit else problems
    opts = JudgeOptions(device=device, small=small, precision=precision, n_seeds=seeds, timing_budget_s=timing_budget_s)
    lm = is_language_model(model) or is_language_model(verifier_model or "")
    options = generation_options(device, precision=precision, small=small, cache_mode=cache_mode, cache_path=cache_path, **generation) if lm else None
    run_strategy(problems, model, strategy, params=params, budget=budget, verify=verify, verifier_model=verifier_model,
                 ground_truth=ground_truth, feedback=feedback, run_id=run_id, runs_root=root, opts=opts, generation=options,
                 backends=backends, cache_path=cache_path, cache_mode=cache_mode, build_jobs=build_jobs, concurrency=concurrency)
    return run_id, read_records(root, run_id)


def improvements(df: pd.DataFrame) -> pd.DataFrame:
    """Per (model, strategy, problem): the first proposal's runtime (the tuner's seed solution),
    the best trusted runtime found, their ratio (``gain``; > 1 is an improvement), and the best
    candidate's id, speedup over eager, flags and knobs."""
    rows = []
    for (model, strategy, problem), g in df.groupby(["model", "strategy", "problem"], dropna=False):
        g = g.sort_values("proposal")
        first = g.iloc[0]
        ok = g[trusted(g) & g["runtime_ms"].notna()]
        best = ok.loc[ok["runtime_ms"].idxmin()] if len(ok) else None
        first_ms = first["runtime_ms"] if bool(trusted(g.iloc[:1]).iloc[0]) else float("nan")
        rows.append({
            "model": model, "strategy": strategy, "problem": problem, "proposals": len(g), "trusted": int(len(ok)),
            "first_ms": first_ms, "best_ms": None if best is None else best["runtime_ms"],
            # a ratio of runtimes is a gain only where they are kernel timings (not CPU or interpreter times)
            "gain": (first_ms / best["runtime_ms"]) if best is not None and first_ms == first_ms
            and times_a_kernel(first["device"], first["small"]) else float("nan"),
            "best_id": None if best is None else best["proposal_id"],
            "best_speedup_eager": None if best is None else best["speedup_eager"],
            "best_correct": None if best is None else bool(best["correct"]),
            "best_flags": [] if best is None else list(best["flags"]),
            "best_knobs": None if best is None or best.get("knobs") is None else dict(best["knobs"]),
            "device": first["device"], "small": first["small"],
        })
    return pd.DataFrame(rows)


def figures(df: pd.DataFrame, out_dir, p: float = 1.0, confirmed: dict | None = None) -> dict:
    """The scaling figure where the run has kernel timings; for the offline tuner's searches with kernel timings, the gains figure
    (each problem's seed time over its best time, ``confirmed`` gains marked:
    :func:`kbench_lib.reports.search_plots.seed_gain_plot`); when the run has verifier decisions, the
    verifiers' figure."""
    out_dir = Path(out_dir)
    made = {}
    if not len(df):
        return made
    if kernel_timed(df).any():  # its panels are speedups: none without kernel timings (a CPU run)
        made["scaling"] = _save(search_plots.scaling_plot(df, p=p), out_dir / "scaling")
    tuned = df[df["model"].astype(str).map(is_tuner)]
    if len(tuned) and search_metrics.seed_gain(tuned, by=("model",))["gain"].notna().any():
        made["gains"] = _save(search_plots.seed_gain_plot(tuned, confirmed), out_dir / "gains")
    confusion = search_metrics.verifier_confusion(df)
    if len(confusion) and confusion["with_ground_truth"].gt(0).any():
        made["verifiers"] = _save(search_plots.verifier_plot(confusion), out_dir / "verifiers")
    return made


def load(run_id: str, runs_root=None) -> pd.DataFrame:
    return read_records(Path(runs_root or RUNS_ROOT), run_id)
