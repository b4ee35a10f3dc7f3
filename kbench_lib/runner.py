"""Batches: judge every candidate a model gives for every problem, recording each verdict at once.

A bad problem or candidate never stops the batch and never loses a record: it becomes a row with a
failure category and a message. A run is resumable: rows already recorded for (model, problem,
sample) are skipped when the same run_id is used again.
"""
from __future__ import annotations

import datetime as _dt
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path

import torch
from tqdm.auto import tqdm

from . import build
from .judge import JudgeError, JudgeOptions, Verdict, build_candidate, judge, prepare_problem
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


def start_builds(candidates: list, device: str, opts: JudgeOptions, workers: int):
    """(pool, {kernel sha: future of its BuildResult}): every candidate that needs a build and has
    none starts building on ``workers`` CPU threads (each build in its own isolated process) and
    the caller goes on; failures are left for the judge to record."""
    pool = ThreadPoolExecutor(max_workers=workers)
    futures = {}
    for c in candidates:
        if c.sha not in futures and build.needs_build(c) and not build.is_built(c, device) and not build.build_failure(c, device):
            futures[c.sha] = pool.submit(build_candidate, c, device, opts)
    return pool, futures


def prebuild(candidates: list, device: str, opts: JudgeOptions, jobs: int, progress: bool = True) -> dict:
    """Builds many candidates at once and waits for them; returns {kernel sha: BuildResult}."""
    pool, futures = start_builds(candidates, device, opts, jobs)
    with pool:
        shas = {f: sha for sha, f in futures.items()}
        return {shas[f]: f.result() for f in tqdm(as_completed(shas), total=len(shas), desc="building", unit="cand", disable=not progress)}


def batch_devices(opts: JudgeOptions, gpus: int | str | None = None) -> list[str]:
    """The devices a batch runs on: ``gpus`` = "all" or N takes the first N local GPUs (one judge
    thread and one timing slot each); otherwise the one device of ``opts``."""
    device = resolve_device(opts.device)
    if not device.startswith("cuda") or gpus in (None, 1, "1"):
        return [device]
    have = torch.cuda.device_count()
    n = have if str(gpus) == "all" else min(int(gpus), have)
    return [f"cuda:{i}" for i in range(max(1, n))]


def _judge_one(problem: Problem, sample, err, prepared, device: str, opts: JudgeOptions) -> Verdict:
    if sample is None or sample.candidate is None:
        return _error_verdict(problem, "unknown", device, opts, (sample and sample.failure) or "load_error", err or sample.error)
    if isinstance(prepared, str):  # the problem's reference could not be prepared
        return _error_verdict(problem, sample.candidate.backend, device, opts, "judge_error", prepared)
    try:
        return judge(problem, sample.candidate, replace(opts, device=device), prepared=prepared)
    except JudgeError as e:
        return _error_verdict(problem, sample.candidate.backend, device, opts, "judge_error", str(e))
    except Exception:  # noqa: BLE001 - never lose the batch to one candidate
        return _error_verdict(problem, sample.candidate.backend, device, opts, "judge_error", traceback.format_exc()[-3000:])


def _prepare(problem: Problem, device: str, opts: JudgeOptions):
    """The problem's reference side on ``device``, or the reason it failed (recorded per candidate)."""
    try:
        return prepare_problem(problem, replace(opts, device=device), device)
    except JudgeError as e:
        return str(e)
    except Exception:  # noqa: BLE001
        return traceback.format_exc()[-3000:]


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
    gpus: int | str | None = None,
    generation=None,
) -> tuple[str, list[dict]]:
    """Judge ``model``'s candidates on ``problems``; returns (run_id, the rows written now).

    The reference side of each problem (seeds, expected outputs, eager baseline) is prepared once
    and shared by its candidates. With ``gpus``, problems are spread over that many local GPUs,
    one judging thread each; every verdict is the same as on one GPU but for its timings.
    ``prebuild_jobs`` > 1 builds candidates on that many CPU cores while judging goes on.
    ``generation`` holds a language model's options (see :func:`kbench_lib.models.get_model`)."""
    opts = opts or JudgeOptions()
    devices = batch_devices(opts, gpus)
    run_id = run_id or new_run_id()
    writer = RecordWriter(runs_root, run_id)
    done = read_records(runs_root, run_id)
    seen = set(zip(done["model"], done["problem"], done["sample"])) if len(done) else set()
    generate = get_model(model, backends, generation)
    groups: list[tuple[Problem, list]] = []
    for problem, samples, err in iter_samples(generate, problems, skip={(p, i) for m, p, i in seen if m == model}):
        jobs = [(problem, None, f"model {model} failed to produce a candidate: {err}")] if err is not None else []
        jobs += [(problem, s, None) for s in samples]
        jobs = [j for j in jobs if (model, problem.key, j[1].index if j[1] else 0) not in seen]
        if jobs:
            groups.append((problem, jobs))
    all_jobs = [j for _, jobs in groups for j in jobs]
    # builds overlap with judging: the judge waits only for the candidate it judges next
    pool, builds = (start_builds([s.candidate for _, s, _ in all_jobs if s is not None and s.candidate is not None], devices[0], opts, prebuild_jobs)
                    if prebuild_jobs > 1 else (None, {}))
    rows: list[dict] = []
    lock = threading.Lock()
    todo = list(reversed(groups))
    bar = tqdm(total=len(all_jobs), desc=f"judging ({model})", unit="cand", disable=not progress)

    def record(problem: Problem, sample, v: Verdict) -> None:
        row = row_from_verdict(v, run_id=run_id, model=model, strategy=strategy, sample=sample.index if sample else 0, tags=problem.tags,
                               extra=sample.meta if sample else None)
        with lock:
            writer.append(row)
            rows.append(row)
            bar.set_postfix_str(problem.key[-40:])
            bar.update(1)

    def work(device: str) -> None:
        if device.startswith("cuda:"):
            torch.cuda.set_device(torch.device(device))
        while True:
            with lock:
                if not todo:
                    return
                problem, jobs = todo.pop()
            prepared = None
            for _, sample, err in jobs:
                c = sample.candidate if sample is not None else None
                if c is not None and c.sha in builds:
                    builds[c.sha].result()
                if prepared is None and c is not None:
                    prepared = _prepare(problem, device, opts)
                record(problem, sample, _judge_one(problem, sample, err, prepared, device, opts))
            if prepared is not None and not isinstance(prepared, str):
                prepared.release()

    try:
        if len(devices) == 1:
            work(devices[0])
        else:
            threads = [threading.Thread(target=work, args=(d,), name=f"judge-{d}") for d in devices]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
    return run_id, rows
