"""Batches: judge every candidate a model gives for every problem, recording each verdict at once.

Generation and judging overlap: the model's samples are taken as they arrive
(:func:`kbench_lib.generation.models.iter_arrivals`; a language model asks for all of them concurrently), a
sample's build starts as soon as its code is there, and judging starts on the first one. Except
for a model that generates on a GPU the batch judges on (``hf:``, :func:`generates_on`): its
samples are all generated first, so that no generation runs beside a timing.

A bad problem or candidate never stops the batch and never loses a record: it becomes a row with a
failure category and a message. A run is resumable: rows already recorded for (model, problem,
sample) are skipped when the same run_id is used again.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import torch
from tqdm.auto import tqdm

from ..core import cpu_sets
from ..isolation import server_pool
from ..judging import build
from ..judging.pipeline import JudgeOptions, build_candidate
from ..generation.models import ModelUnavailable, get_model, iter_arrivals
from ..core.provenance import resolve_device
from ..scoring.records import RecordWriter, read_records
from ..core.paths import RUNS_ROOT
from ..suite.problems import Problem
from .local_batch import _Batch, lane_processes_by_default
from .verdicts import new_run_id



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


def start_servers(devices: list[str], wait: bool = True) -> None:
    """Starts the warm fork servers a batch over ``devices`` will fork its workers from (one per
    device, each on the cores that batch gives its device: :mod:`kbench_lib.core.cpu_sets`), so that its
    first workers do not wait for them (8-12 s): a
    notebook's setup, or anything a batch waits for anyway. The batch's judging threads take them;
    a later batch of the same process over the same devices takes them too (``server_pool``).
    Where such a batch judges each device in a process of its own (:func:`lane_processes_by_default`),
    those processes are started instead, each with its server (:func:`kbench_lib.batch.lane_host.start`)."""
    if lane_processes_by_default(devices):
        from .lane_host import start

        start(devices, wait)
        return
    pins = cpu_sets.gpu_cpu_sets(devices)
    futures = [server_pool.start_unowned(d.startswith("cuda"), pins.get(d)) for d in devices]
    if wait:
        for f in futures:
            f.result()


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
    prebuild_jobs: int | None = None,
    gpus: int | str | None = None,
    generation=None,
    ray: str | bool | None = None,
    overlap: bool = False,
    lane_processes: bool | None = None,
) -> tuple[str, list[dict]]:
    """Judge ``model``'s candidates on ``problems``; returns (run_id, the rows written now).

    The reference side of each problem (seeds, expected outputs, eager baseline) is prepared once
    and shared by its candidates. With ``gpus``, samples are spread over that many local GPUs, one
    judging lane each (a process of its own per GPU: ``lane_processes``): a problem's samples go to one GPU until it is ``lanes.SPLIT_AFTER`` ahead of
    the least loaded, then on to that one, which prepares the problem too, and a GPU that runs dry
    takes waiting samples from the longest queue (:mod:`kbench_lib.batch.lanes`); every verdict is the
    same as on one GPU but for its timings. Over several GPUs, each GPU's workers run on cores of
    their own (:mod:`kbench_lib.core.cpu_sets`).
    A lane prepares the references of the problems waiting in its line while its fork server
    starts and the next one while a worker starts behind its gate (:meth:`_Batch.begin`).
    ``prebuild_jobs`` > 1 builds candidates on that many CPU cores while judging goes on (None:
    :func:`kbench_lib.judging.build.default_jobs`).
    ``overlap``: each device's next candidate starts and runs its correctness calls while the
    judge checks the previous one (:mod:`kbench_lib.batch.overlap`; the same verdicts). Off by default:
    it gains nothing measurable on the throughput batch and holds two candidates' result files in
    /dev/shm at once.
    ``lane_processes``: each device's lane judged by a process of its own that sees only that
    device (:mod:`kbench_lib.batch.lane_process`); by default on several GPUs
    (:func:`lane_processes_by_default`).
    ``generation`` holds a language model's options (see :func:`kbench_lib.generation.models.get_model`).
    ``ray``: run the batch on a Ray cluster instead (True or "" for ``ray.init()``'s default, "auto"
    or an address; :mod:`kbench_lib.cluster`, docs/CLUSTER.md)."""
    if ray is not None and ray is not False:
        from ..cluster import run_batch_on_ray

        return run_batch_on_ray(problems, model, address=None if ray is True else ray, run_id=run_id, runs_root=runs_root, opts=opts,
                                strategy=strategy, backends=backends, progress=progress, prebuild_jobs=prebuild_jobs, gpus=gpus,
                                generation=generation)
    opts = opts or JudgeOptions()
    devices = batch_devices(opts, gpus)
    run_id = run_id or new_run_id()
    done = read_records(runs_root, run_id)
    seen = set(zip(done["model"], done["problem"], done["sample"])) if len(done) else set()
    generate = get_model(model, backends, generation)
    try:
        batch = _Batch(RecordWriter(runs_root, run_id), run_id, model, strategy, opts, devices, prebuild_jobs, progress, overlap,
                       lane_processes)
        arrivals = iter_arrivals(generate, problems, skip={(p, i) for m, p, i in seen if m == model})
        if generates_on(generate, devices):  # its GPU work would run under the timings: generate everything first
            arrivals = _generated_first(arrivals)
        return run_id, batch.run(arrivals, seen)
    finally:
        close = getattr(generate, "close", None)
        if close is not None:
            close()


def _cuda_index(device: str | None) -> int | None:
    if not device or not str(device).startswith("cuda"):
        return None
    _, _, index = str(device).partition(":")
    return int(index) if index else 0  # "cuda" is the default device, the first visible one


def generates_on(generate, devices: list[str]) -> bool:
    """Whether ``generate`` (a model) computes on a local GPU that one of ``devices`` judges on:
    a local checkpoint (``hf:``) whose generation, overlapping with judging, would run beside the
    timed candidates and the eager baseline. Remote models (HTTP) and offline ones never do."""
    provider = getattr(generate, "provider", None)
    local = _cuda_index(getattr(provider, "device", None)) if getattr(provider, "name", None) == "hf" else None
    return local is not None and local in {_cuda_index(d) for d in devices}


def _generated_first(arrivals):
    """``arrivals``, all generated before the first is handed on (no overlap with judging); when
    the model stops (:class:`ModelUnavailable`) the ones before are handed on, then it is raised."""
    got, error = [], None
    try:
        for a in arrivals:
            got.append(a)
    except ModelUnavailable as e:
        error = e
    yield from got
    if error is not None:
        raise error
