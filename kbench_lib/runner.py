"""Batches: judge every candidate a model gives for every problem, recording each verdict at once.

A bad problem or candidate never stops the batch and never loses a record: it becomes a row with a
failure category and a message. A run is resumable: rows already recorded for (model, problem,
sample) are skipped when the same run_id is used again.
"""
from __future__ import annotations

import datetime as _dt
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path

from tqdm.auto import tqdm

from . import build
from .judge import JudgeError, JudgeOptions, Verdict, build_candidate, judge
from .models import get_model, iter_samples
from .problems import Problem
from .provenance import device_name, environment, resolve_device
from .records import RecordWriter, read_records, row_from_verdict

RUNS_ROOT = Path(__file__).resolve().parent.parent / "results" / "runs"


def new_run_id(prefix: str = "run") -> str:
    return f"{prefix}-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"


def _error_verdict(problem: Problem, backend: str, device: str, opts: JudgeOptions, failure: str, message: str) -> Verdict:
    return Verdict(
        problem=problem.key, level=problem.level, backend=backend, device=device, device_name=device_name(device),
        precision=opts.precision, failure=failure, message=message[-4000:], env=environment(device),
    )


def prebuild(candidates: list, device: str, opts: JudgeOptions, jobs: int, progress: bool = True) -> dict:
    """Builds many candidates at once (each in its own isolated process), so a batch on a
    many-core machine does not compile one extension at a time. Failures are left for the judge
    to record; returns {kernel sha: BuildResult}."""
    todo = {c.sha: c for c in candidates if build.needs_build(c) and not build.is_built(c, device)}
    results = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(build_candidate, c, device, opts): sha for sha, c in todo.items()}
        for f in tqdm(as_completed(futures), total=len(futures), desc="building", unit="cand", disable=not progress):
            results[futures[f]] = f.result()
    return results


def run_batch(
    problems: list[Problem],
    model: str = "reference",
    *,
    run_id: str | None = None,
    runs_root: str | Path = RUNS_ROOT,
    opts: JudgeOptions | None = None,
    strategy: str = "single",
    backends: tuple[str, ...] | None = None,
    progress: bool = True,
    prebuild_jobs: int = 0,
    generation=None,
) -> tuple[str, list[dict]]:
    """Judge ``model``'s candidates on ``problems``; returns (run_id, the rows written now).
    ``generation`` holds a language model's options (see :func:`kbench_lib.models.get_model`)."""
    opts = opts or JudgeOptions()
    device = resolve_device(opts.device)
    run_id = run_id or new_run_id()
    writer = RecordWriter(runs_root, run_id)
    done = read_records(runs_root, run_id)
    seen = set(zip(done["model"], done["problem"], done["sample"])) if len(done) else set()
    generate = get_model(model, backends, generation)
    rows: list[dict] = []
    jobs = []
    for problem, samples, err in iter_samples(generate, problems, skip={(p, i) for m, p, i in seen if m == model}):
        if err is not None:
            jobs.append((problem, None, f"model {model} failed to produce a candidate: {err}"))
        for s in samples:
            jobs.append((problem, s, None))
    if prebuild_jobs > 1:
        prebuild([s.candidate for _, s, _ in jobs if s is not None and s.candidate is not None], device, opts, prebuild_jobs, progress)
    bar = tqdm(jobs, desc=f"judging ({model})", unit="cand", disable=not progress)
    for problem, sample, err in bar:
        index = sample.index if sample else 0
        if (model, problem.key, index) in seen:
            continue
        bar.set_postfix_str(problem.key[-40:])
        if sample is None or sample.candidate is None:
            v = _error_verdict(problem, "unknown", device, opts, (sample and sample.failure) or "load_error", err or sample.error)
        else:
            try:
                v = judge(problem, sample.candidate, replace(opts))
            except JudgeError as e:
                v = _error_verdict(problem, sample.candidate.backend, device, opts, "judge_error", str(e))
            except Exception:  # noqa: BLE001 - never lose the batch to one candidate
                v = _error_verdict(problem, sample.candidate.backend, device, opts, "judge_error", traceback.format_exc()[-3000:])
        row = row_from_verdict(v, run_id=run_id, model=model, strategy=strategy, sample=index, tags=problem.tags,
                               extra=sample.meta if sample else None)
        writer.append(row)
        rows.append(row)
    return run_id, rows
