"""Runs of several models over selected problems: what ``notebooks/02_generate.ipynb`` and
``kbench run`` call. Offline solvers (``reference``, ``torch-compile``, ``folder:``) and language
models share one path: a model's candidates are judged and every verdict is recorded."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..judging.pipeline import JudgeOptions
from ..suite.problems import Problem, discover_with_errors
from ..core.provenance import device_name, resolve_device
from ..scoring.records import read_records
from ..batch.runner import RUNS_ROOT, new_run_id, run_batch
from .spec import is_language_model

REPO = Path(__file__).resolve().parents[2]


def generation_options(device: str, *, samples: int = 1, temperature: float | None = 0.7, max_tokens: int = 8192,
                       seed: int | None = None, backend: str | None = None, hardware: str | None = "auto", shapes: bool = True,
                       example: bool = True, precision: str = "fp32", small: bool | None = None, cache_mode: str = "live",
                       cache_path: str | None = None, concurrency: int | None = None, queue_size: int | None = None, timeout_s: float = 600.0,
                       max_retries: int = 8, progress: bool = True) -> dict:
    """A language model's options (a dict for :class:`.GenerationOptions`). On a GPU the prompt asks
    for CUDA and describes that GPU (``hardware="auto"``); on the CPU it asks for C++ and lists the
    SMALL configurations, the ones the judge runs there."""
    on_gpu = resolve_device(device).startswith("cuda")
    hardware = {"none": None, "auto": device_name(resolve_device(device)) if on_gpu else None}.get(hardware or "none", hardware)
    prompt = {"backend": backend or ("cuda" if on_gpu else "cpp"), "example": example, "shapes": shapes, "precision": precision,
              "hardware": hardware, "small": (not on_gpu) if small is None else small}
    return {"samples": samples, "temperature": temperature, "max_tokens": max_tokens, "seed": seed, "prompt": prompt,
            "cache_mode": cache_mode, "cache_path": cache_path, "concurrency": concurrency, "queue_size": queue_size, "timeout_s": timeout_s,
            "max_retries": max_retries, "progress": progress}


def select(problems_dir=None, levels=None, filters=None, limit: int | None = None) -> list[Problem]:
    """Problems under ``problems_dir`` (default the repository's), in ``levels``, whose key contains
    one of ``filters``; the first ``limit`` (all when 0 or None)."""
    problems, _ = discover_with_errors(problems_dir or REPO / "problems")
    problems = [p for p in problems if (not levels or p.level in levels) and (not filters or any(f in p.key for f in filters))]
    return problems[:limit] if limit else problems


def run_models(models: list[str], *, problems_dir=None, levels=None, filters=None, limit: int | None = None, device: str = "auto",
               precision: str = "fp32", small: bool | None = None, seeds: int = 5, timing_budget_s: float = 1.0, run_id: str | None = None,
               runs_root=None, ray: str | bool | None = None, **generation) -> tuple[str, pd.DataFrame]:
    """Judge every model's candidates on the selected problems, all in one run; returns the run id
    and its records. ``generation`` takes :func:`generation_options`' keywords (language models).
    ``ray``: on a Ray cluster (True, "auto" or an address; docs/CLUSTER.md).
    Offline solvers are judged on the selected problems they have a runnable candidate for."""
    from ..workflows import _batch_device, plan, runnable_backends

    device = _batch_device(device, ray)
    run_id = run_id or new_run_id()
    root = Path(runs_root or RUNS_ROOT)
    opts = JudgeOptions(device=device, small=small, precision=precision, n_seeds=seeds, timing_budget_s=timing_budget_s)
    chosen = select(problems_dir, levels, filters)
    backend = generation.get("backend")
    backends = tuple(b for b in runnable_backends(device) if backend in (None, b))
    for model in models:
        if is_language_model(model):
            todo = chosen[:limit] if limit else chosen
            options = generation_options(device, precision=precision, small=small, **generation)
        else:
            keys = {p.key for p in plan(problems_dir, model, device, levels)[0]}
            todo = [p for p in chosen if p.key in keys]
            todo, options = (todo[:limit] if limit else todo), None
        run_batch(todo, model, run_id=run_id, runs_root=root, opts=opts, backends=backends, generation=options, ray=ray)
    return run_id, read_records(root, run_id)


def generation_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per model: samples, how many had no code or were refused, tokens, latency, cost, cache hits."""
    if not len(df):
        return pd.DataFrame()
    g = df.groupby("model", dropna=False)
    out = pd.DataFrame({
        "samples": g.size(),
        "no_code": g["failure"].apply(lambda f: int((f == "no_code").sum())),
        "generation_error": g["failure"].apply(lambda f: int((f == "generation_error").sum())),
        "prompt_tokens": g["prompt_tokens"].sum(min_count=1),
        "completion_tokens": g["completion_tokens"].sum(min_count=1),
        "reasoning_tokens": g["reasoning_tokens"].sum(min_count=1),
        "median_latency_s": g["gen_latency_s"].median(),
        "cost_usd": g["gen_cost_usd"].sum(min_count=1),
        "from_cache": g["gen_cached"].apply(lambda c: int(c.fillna(False).astype(bool).sum())),
    })
    return out.reset_index()


def prompt_preview(problem: Problem, device: str = "auto", precision: str = "fp32", small: bool | None = None, **generation) -> str:
    """The user message a language model would get for ``problem`` with these options."""
    from .prompts import PromptOptions, build_messages

    prompt = generation_options(device, precision=precision, small=small, **generation)["prompt"]
    return build_messages(problem, PromptOptions(**prompt))[1]["content"]
