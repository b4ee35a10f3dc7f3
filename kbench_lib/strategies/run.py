"""Running a strategy over problems: the search counterpart of :func:`kbench_lib.batch.runner.run_batch`.

Each problem gets its own :class:`~.search.Search` (problems one after another, or
``concurrency`` at a time: language-model latency then overlaps, while the judge still runs one
candidate at a time); every record goes to ``<runs_root>/<run_id>/records/`` as soon as it exists.
Running again with the same run id resumes: recorded proposals are read back, not judged again,
and a language model answers them from its cache; a problem whose search broke is searched again,
and its error recorded again only if it differs from the one recorded.
"""
from __future__ import annotations

import inspect
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tqdm.auto import tqdm

from ..generation.cache import DEFAULT_PATH
from ..generation.spec import is_language_model
from ..judging import build
from ..judging.pipeline import JudgeOptions
from ..generation.models import ModelUnavailable
from ..suite.problems import Problem
from ..core.provenance import resolve_device
from ..scoring.records import RecordWriter, read_records, row_from_verdict, truncate
from ..batch.runner import RUNS_ROOT, generates_on, new_run_id
from ..batch.verdicts import _error_verdict
from . import evolve, refine, single
from .observations import ObservationStore
from .proposers import make_proposer
from .search import Budget, Judging, Search, SearchEnv
from .verifiers import make_verifiers

STRATEGIES = {"single": single.run, "refine": refine.run, "evolve": evolve.run}
NAMES = (*STRATEGIES, "verify")  # verify: single with the language-model verifiers
DEFAULT_VERIFIERS = ("compile", "memory", "numerics")
STRATEGY_ERROR = "strategy_error"  # a search that broke on one problem (recorded; the batch goes on)


def strategy_params(strategy: str) -> dict:
    """A strategy's parameters and their defaults."""
    fn = STRATEGIES["single" if strategy == "verify" else strategy]
    return {n: p.default for n, p in list(inspect.signature(fn).parameters.items())[1:]}


def _recorded(runs_root, run_id: str, model: str, label: str) -> tuple[dict[str, dict[str, dict]], set[tuple[str, str]]]:
    """({problem: {proposal id: latest row}}, {(problem, message) of its strategy errors}) already
    in the run for this model and strategy."""
    df = read_records(runs_root, run_id)
    if not len(df):
        return {}, set()
    df = df[(df["model"] == model) & (df["strategy"] == label)].sort_values("timestamp")
    errors = df[df["failure"] == STRATEGY_ERROR]
    out: dict[str, dict[str, dict]] = {}
    for row in df[df["proposal_id"].notna()].to_dict("records"):
        out.setdefault(row["problem"], {})[row["proposal_id"]] = row
    return out, set(zip(errors["problem"], errors["message"]))


def run_strategy(problems: list[Problem], model: str = "tune", strategy: str = "evolve", *, params: dict | None = None,
                 budget: Budget | dict | None = None, verify=None, verifier_model: str | None = None, ground_truth: bool = False,
                 feedback="profile", run_id: str | None = None, runs_root=RUNS_ROOT, opts: JudgeOptions | None = None,
                 generation=None, backends: tuple[str, ...] | None = None, cache_path=None, cache_mode: str | None = None,
                 build_jobs: int | None = None, concurrency: int = 1, progress: bool = True) -> tuple[str, list[dict]]:
    """Search for candidates of ``model`` on every problem with ``strategy``; returns (run id, rows
    written now). ``params`` are the strategy's (:func:`strategy_params`), ``verify`` names
    verifiers (:mod:`.verifiers`) that check each candidate before the judge, with
    ``verifier_model`` (default: ``model`` when it is a language model); ``ground_truth`` judges
    rejected candidates too. ``generation`` holds a language model's options
    (:func:`kbench_lib.generation.runs.generation_options`). Offline models need none: ``tune``
    (the autotuner over ``problems/solutions``), ``tune:PATH``, or a fixed set of candidates
    (``reference``, ``folder:PATH``) for ``single``."""
    if strategy == "verify":
        strategy, verify = "single", tuple(verify or DEFAULT_VERIFIERS)
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}: use one of {NAMES}")
    params = dict(params or {})
    unknown = set(params) - set(strategy_params(strategy))
    if unknown:
        raise ValueError(f"{strategy} takes {sorted(strategy_params(strategy))}, not {sorted(unknown)}")
    budget = budget if isinstance(budget, Budget) else Budget(**(budget or {}))
    opts = opts or JudgeOptions()
    device = resolve_device(opts.device)
    run_id = run_id or new_run_id()
    label = strategy + ("+verify" if verify else "")
    generation = dict(generation.__dict__) if hasattr(generation, "__dataclass_fields__") else generation
    g = generation or {}
    store = ObservationStore(cache_path or g.get("cache_path") or DEFAULT_PATH, cache_mode or g.get("cache_mode") or "live")
    proposer, verifiers = None, ()
    try:
        proposer = make_proposer(model, backends, generation, feedback, params.get("seed", 0))
        verifiers = make_verifiers(verify, verifier_model or (model if is_language_model(model) else None), generation)
        return _run(problems, model, strategy, label, params, budget, verifiers, ground_truth, run_id, Path(runs_root), opts, device,
                    proposer, store, build_jobs, concurrency, progress)
    finally:
        for m in {id(v.model): v.model for v in verifiers if getattr(v, "model", None) is not None}.values():
            m.close()
        if proposer is not None:
            proposer.close()
        store.close()


def _run(problems, model, strategy, label, params, budget, verifiers, ground_truth, run_id, runs_root, opts, device, proposer, store,
         build_jobs, concurrency, progress) -> tuple[str, list[dict]]:
    writer = RecordWriter(runs_root, run_id)
    recorded, errors = _recorded(runs_root, run_id, model, label)
    rows: list[dict] = []
    lock = threading.Lock()
    bar = tqdm(desc=f"{label} ({model})", unit="cand", disable=not progress)

    def write(row: dict) -> None:
        with lock:
            writer.append(row)
            rows.append(row)
            bar.set_postfix_str(f"{row['problem'][-30:]} {row.get('proposal_id')}")
            bar.update(1)

    env = SearchEnv(run_id=run_id, model=model, strategy=label, proposer=proposer, judging=Judging(opts, device, build.default_jobs(device) if build_jobs is None else build_jobs), write=write,
                    store=store, budget=budget, verifiers=verifiers, ground_truth=ground_truth, params={"strategy": strategy, **params})
    models = [getattr(proposer, "model", None), *(getattr(v, "model", None) for v in verifiers)]
    if concurrency > 1 and any(generates_on(m, [device]) for m in models if m is not None):
        concurrency = 1  # a model on the judging GPU would generate for one problem while another's candidates are timed
    covers = getattr(proposer, "covers", None)
    todo = [p for p in problems if covers is None or covers(p)]

    def one(problem: Problem) -> None:
        try:
            STRATEGIES[strategy](Search(problem, env, recorded.get(problem.key)), **params)
        except ModelUnavailable:
            raise
        except Exception:  # noqa: BLE001 - one problem's broken search is its record, not the batch's end
            v = _error_verdict(problem, "unknown", device, opts, STRATEGY_ERROR, traceback.format_exc()[-3000:])
            if (problem.key, truncate(v.message)) in errors:  # a resume that broke where it broke before: recorded already
                return
            write(row_from_verdict(v, run_id=run_id, model=model, strategy=label, tags=problem.tags, extra={"judged": False}))
        finally:
            env.judging.release(problem)

    try:
        if concurrency <= 1:
            for p in todo:
                one(p)
        else:
            pool = ThreadPoolExecutor(max_workers=concurrency)
            try:
                for f in [pool.submit(one, p) for p in todo]:
                    f.result()
            except BaseException:  # the model is unavailable (or ^C): problems not started yet are not started
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            pool.shutdown(wait=True)
    finally:
        bar.close()
    return run_id, rows
