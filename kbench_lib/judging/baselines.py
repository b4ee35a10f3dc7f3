"""Baselines: every problem's default configuration timed in modes ``eager``, ``compile`` and
``cudagraph``, with the judge's timing discipline, one row per (problem, mode) with provenance.

A sweep is resumable: each (problem, mode) is written to its own parquet file under
``<root>/<device-slug>/`` as soon as it is measured; files that exist are skipped.
``baselines_store`` reads them back.

Measuring runs in a child process that takes (problem, mode) jobs one after another (starting
torch and CUDA once per batch, not once per row). A job that fails is recorded and ends the
child, so the next job starts in a clean process (a CUDA error poisons its context); a job that
hangs past ``timeout_s`` is recorded as ``timeout`` by the child's own watchdog; a child that dies
(segfault, out of host memory) leaves the job it was on, which the sweep records as ``crash``
before it starts a new child for the rest. A crash, a hang or an out-of-memory in one job never
ends the sweep.

``compile`` spends most of its time in Inductor, on the CPU. With ``compile_jobs > 1`` the sweep
goes in chunks of problems: it first compiles a chunk's problems in that many processes at once
(nothing is timed meanwhile), into an Inductor and Triton cache shared with the measuring child;
then it times the chunk, one job at a time, and records both the cold compile time
(``compile_cold_s``, from the parallel phase) and the warm one (``compile_s``). Neither counts the
compiler's own start in a process (``start_compiler``), which every process pays once. Chunks keep a sweep
that is cut off from wasting the compile work of problems it never reached.

    python -m kbench_lib.judging.baselines batch JOBS_JSON DEVICE PRECISION SMALL BUDGET TIMEOUT
    python -m kbench_lib.judging.baselines warm PROBLEM_FILE DEVICE PRECISION SMALL OUT_JSON
"""
from __future__ import annotations

import datetime as _dt
import json
import sys
import time
from pathlib import Path

import torch

from ..suite.baselines_store import file_name
from ..suite.problems import Problem, load_problem
from ..core.provenance import device_slug, environment, resolve_device
from ..suite.reference import build_reference, make_inputs, set_flags
from ..measure.tensors import require_grad, to_device
from ..measure.timing import time_callable

MODES = ("eager", "compile", "cudagraph")
N_INPUT_SETS = 3


def _file_for(root: Path, problem: Problem, mode: str, precision: str, small: bool) -> Path:
    return root / file_name(problem.key, mode, precision, small)


def _graphed(model, sets: list):
    """One CUDA graph per input set (each set is its graph's static input); fn(*inputs) replays the
    graph captured on exactly those tensors."""
    graphs = {}
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        for s in sets:
            for _ in range(2):  # warm up outside the graph (lazy init, workspace allocation)
                model(*s)
    torch.cuda.current_stream().wait_stream(stream)
    for s in sets:
        g = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(g):
            out = model(*s)
        graphs[id(s[0]) if s else 0] = (g, out)

    def replay(*inputs):
        g, out = graphs[id(inputs[0]) if inputs else 0]
        g.replay()
        return out

    return replay


def _row(p: Problem, mode: str, device: str, precision: str, small: bool) -> dict:
    """What every row has, measured or failed: the problem, the mode, provenance, no result yet."""
    return {"problem": p.key, "level": p.level, "mode": mode, "precision": precision, "small": small, "task": p.task,
            "device": device, "runtime_ms": None, "failure": None, "error": None, **environment(device),
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def measure_one(problem: Problem, mode: str, device: str, precision: str = "fp32", small: bool = False, budget_s: float = 5.0,
                shared: dict | None = None) -> dict:
    """Time one mode of one problem in this process; returns the row (runtime or failure).

    ``shared``: a dict kept across calls for the same problem, so that its modes share one
    reference, one set of inputs and one roofline count (the caller clears it between problems)."""
    from ..suite.devices import measured_spec_for, spec_for
    from ..suite.roofline import count, sol_ms

    shared = {} if shared is None else shared

    row = {**_row(problem, mode, device, precision, small), "device_ms": None, "compile_s": None}
    cfg = problem.declared_configs(small=small)[0]
    try:
        if "count" not in shared:
            try:
                shared["count"] = count(problem, cfg.overrides, 2 if precision != "fp32" else None)
            except Exception as e:  # noqa: BLE001 - remembered, so every mode records it
                shared["count"] = e
        c = shared["count"]
        if isinstance(c, Exception):
            raise c
        row["flops"], row["bytes"] = c["flops"], c["bytes"]
        spec = spec_for(row["device_name"]) if device.startswith("cuda") else None
        if spec:
            row["sol_ms"], row["bound"] = sol_ms(c["flops"], c["bytes"], spec, precision)
            row["sol_measured_ms"] = sol_ms(c["flops"], c["bytes"], measured_spec_for(row["device_name"]), precision)[0]
    except Exception as e:  # noqa: BLE001 - a missing bound is recorded, the timing goes on
        row["error"] = f"roofline: {type(e).__name__}: {str(e)[:300]}"
    try:
        set_flags()
        if "model" not in shared:
            shared["model"] = build_reference(problem, cfg, 0, 1, device, precision)[0]
            shared["sets"] = [to_device(make_inputs(problem, cfg, 1 + 7919 * k, precision), device) for k in range(N_INPUT_SETS)]
        model, sets = shared["model"], shared["sets"]
        backward = problem.task == "backward"
        if backward:
            if mode == "cudagraph":
                raise NotImplementedError("cudagraph mode times forward-only tasks")
            for s in sets:
                require_grad(s)
        if mode == "compile":
            model, row["compile_s"] = _compile_and_call(model, sets[0], backward, device)
        if mode == "cudagraph":
            if not device.startswith("cuda"):
                raise NotImplementedError("cudagraph mode needs a CUDA device")
            fn = _graphed(model, sets)
        elif backward:
            def fn(*inputs):
                model.zero_grad(set_to_none=True)
                out = model(*inputs)
                outs = list(out) if isinstance(out, (list, tuple)) else [out]
                torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
                return out
        else:
            def fn(*inputs):
                with torch.no_grad():
                    return model(*inputs)
        t = time_callable(fn, sets, device, budget_s=budget_s)
        row.update(runtime_ms=t.median_ms, runtime_std_ms=t.std_ms, runtime_p10_ms=t.p10_ms, runtime_p90_ms=t.p90_ms,
                   runtime_min_ms=t.min_ms, n_trials=t.n_trials, rse=t.rse, device_ms=t.device_ms, remeasured=t.remeasured,
                   head_start_us=t.head_start_us)
    except torch.cuda.OutOfMemoryError as e:
        row["failure"], row["error"] = "oom", str(e)[:2000]
    except NotImplementedError as e:
        row["failure"], row["error"] = "unsupported", str(e)[:2000]
    except Exception as e:  # noqa: BLE001 - every mode's failure is a row, never a crash of the sweep
        row["failure"], row["error"] = "runtime_error", f"{type(e).__name__}: {str(e)[:2000]}"
    return row


_compiler_started = False


def start_compiler(device: str) -> None:
    """Once per process: compile and run a one-line function, so that what a process pays a single
    time (Dynamo's and Inductor's imports, the C++ compiler's and the vector ISA's checks, a GPU's
    first kernel launch) is spent before a problem's compile is timed. Without it, the first problem
    a process compiles carries several seconds the others do not."""
    global _compiler_started
    if _compiler_started:
        return
    fn = torch.compile(lambda x: torch.relu(x) * 2 + 1)
    with torch.no_grad():
        fn(torch.ones(64, device=device))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    torch._dynamo.reset()
    _compiler_started = True


def _compile_and_call(model, inputs: list, backward: bool, device: str):
    """(the model under torch.compile, seconds its first call took: the compile), forward and, for
    backward tasks, backward. The process's compiler is started first (``start_compiler``)."""
    start_compiler(device)
    compiled = torch.compile(model)
    t0 = time.monotonic()
    if backward:
        out = compiled(*inputs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
    else:
        with torch.no_grad():
            compiled(*inputs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return compiled, time.monotonic() - t0


def compile_once(problem: Problem, device: str, precision: str = "fp32", small: bool = False) -> float:
    """Compile the reference with torch.compile and run it once (forward, and backward for backward
    tasks); returns the seconds that took (the cold compile time when the caches are empty)."""
    set_flags()
    cfg = problem.declared_configs(small=small)[0]
    model, _, _ = build_reference(problem, cfg, 0, 1, device, precision)
    inputs = to_device(make_inputs(problem, cfg, 1, precision), device)
    backward = problem.task == "backward"
    if backward:
        require_grad(inputs)
    return _compile_and_call(model, inputs, backward, device)[1]


def _cache_env(folder: Path) -> dict[str, str]:
    """One Inductor and Triton cache for every process of a sweep (each process has its own TMPDIR,
    where Inductor would otherwise keep its cache)."""
    cache = folder / ".work" / "cache"
    return {"TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "TRITON_CACHE_DIR": str(cache / "triton")}


def _child_env(folder: Path) -> dict[str, str]:
    """The shared caches, and the code version (a copy of the tree without .git has it only from
    the environment, which the sandbox does not pass on by itself)."""
    from ..core.provenance import git_sha

    sha = git_sha()
    return {**_cache_env(folder), **({"KBENCH_GIT_SHA": sha} if sha else {})}


def _warm_file(folder: Path, problem: Problem, precision: str, small: bool) -> Path:
    return folder / ".work" / _file_for(Path("warm"), problem, "compile", precision, small).with_suffix(".json").name


def prewarm_compile(problems: list[Problem], device: str, precision: str, small: bool, folder: Path, jobs: int,
                    timeout_s: float, progress: bool = True) -> None:
    """Compile every problem in ``jobs`` processes at once, into the sweep's shared caches; each
    writes its cold compile time (or its failure) to a JSON file the timing process reads."""
    from concurrent.futures import ThreadPoolExecutor

    from tqdm.auto import tqdm

    from ..isolation import sandbox

    def one(p: Problem) -> None:
        out = _warm_file(folder, p, precision, small)
        if out.exists():
            return
        workdir = folder / ".work" / f"warm-{out.stem}"
        res = sandbox.run_isolated(
            ["-m", "kbench_lib.judging.baselines", "warm", str(p.path), device, precision, str(int(small)), str(out)],
            workdir=str(workdir), timeout_s=timeout_s, env_extra=_cache_env(folder), isolate_network=False,
        )
        if not out.exists():
            what = f"cold compile exceeded {timeout_s:g} s" if res.timed_out else f"cold compile exit {res.returncode}: {res.log[-800:]}"
            out.write_text(json.dumps({"error": what}))

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(tqdm(pool.map(one, problems), total=len(problems), desc="compiling", unit="problem", disable=not progress))


def _write(row: dict, path: Path) -> None:
    import pandas as pd

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    pd.DataFrame([row]).to_parquet(tmp)
    tmp.replace(path)


def _failure_row(p: Problem, mode: str, device: str, precision: str, small: bool, failure: str, error: str) -> dict:
    return {**_row(p, mode, device, precision, small), "failure": failure, "error": error}


def _measure_batch(jobs: list[dict], folder: Path, device: str, precision: str, small: bool, budget_s: float,
                   timeout_s: float, progress=None) -> None:
    """Runs ``jobs`` (dicts: problem path, mode, out file, warm file or None) in measuring children
    until every job has its row; ``progress(n)`` is told how many rows exist after each poll."""
    import threading

    from ..isolation import sandbox

    work = folder / ".work"
    work.mkdir(parents=True, exist_ok=True)
    inflight = work / "inflight.json"
    while True:
        pending = [j for j in jobs if not Path(j["out"]).exists()]
        if not pending:
            return
        inflight.unlink(missing_ok=True)
        spec = work / "jobs.json"
        spec.write_text(json.dumps(pending))
        box: dict = {}
        thread = threading.Thread(target=lambda: box.update(res=sandbox.run_isolated(
            ["-m", "kbench_lib.judging.baselines", "batch", str(spec), device, precision, str(int(small)), str(budget_s), str(timeout_s)],
            workdir=str(work), timeout_s=timeout_s * len(pending) + 120, env_extra=_child_env(folder), isolate_network=False)))
        thread.start()
        while thread.is_alive():
            thread.join(timeout=1.0)
            if progress is not None:
                progress(sum(Path(j["out"]).exists() for j in jobs))
        res = box.get("res")
        left = [j for j in pending if not Path(j["out"]).exists()]
        if not left:
            continue
        try:
            on = json.loads(inflight.read_text())
        except (OSError, ValueError):
            on = None
        victim = next((j for j in left if on and j["out"] == on.get("out")), None)
        if victim is not None:  # the child died or hung on this job
            stuck = [victim]
        elif len(left) == len(pending):  # the child could not even start: every job left is recorded, none run
            stuck = left
        else:  # the child ended after recording a failure; a fresh one takes the rest
            continue
        log = res.log[-1500:] if res is not None else ""
        timed_out = res is not None and res.timed_out
        for j in stuck:
            row = _failure_row(load_problem(j["problem"]), j["mode"], device, precision, small, "timeout" if timed_out else "crash",
                               (f"exceeded {timeout_s:g} s" if timed_out else f"exit {getattr(res, 'returncode', None)}: ") + log)
            _write(row, Path(j["out"]))


def _interleaved(keys: list[str], level: dict[str, object]) -> list[str]:
    """Keys taken from each level in turn (order kept within a level): a sweep cut off part-way
    has measured a like share of every level, not all of the first ones."""
    import itertools

    groups: dict[object, list[str]] = {}
    for k in keys:
        groups.setdefault(level[k], []).append(k)
    return [k for batch in itertools.zip_longest(*groups.values()) for k in batch if k is not None]


def sweep(problems: list[Problem], modes=MODES, device: str = "auto", precision: str = "fp32", small: bool | None = None,
          root: str | Path | None = None, timeout_s: float = 600.0, budget_s: float = 5.0, progress: bool = True,
          compile_jobs: int = 0, chunk: int = 28) -> Path:
    """Measure every (problem, mode) not yet on disk; returns the device's baseline folder.
    ``compile_jobs > 1``: compile each chunk's pending ``compile`` rows that many at a time first.
    Problems are taken from each level in turn (``_interleaved``)."""
    from tqdm.auto import tqdm

    from ..suite.baselines_store import DEFAULT_ROOT

    device = resolve_device(device)
    small = (not device.startswith("cuda")) if small is None else small
    folder = (Path(root or DEFAULT_ROOT) / device_slug(device)).resolve()
    todo = [(p, m) for p in problems for m in modes if not _file_for(folder, p, m, precision, small).exists()]
    order = _interleaved(list(dict.fromkeys(p.key for p, _ in todo)), {p.key: p.level for p, _ in todo})
    chunks = [order[i:i + max(1, chunk)] for i in range(0, len(order), max(1, chunk))] if compile_jobs > 1 else [order]
    bar = tqdm(total=len(todo), desc="baselines", unit="run", disable=not progress)
    done_before = 0
    for keys in chunks:
        in_chunk = set(keys)
        part = [(p, m) for p, m in todo if p.key in in_chunk]
        if compile_jobs > 1:
            prewarm_compile([p for p, m in part if m == "compile"], device, precision, small, folder, compile_jobs, timeout_s, progress)
        jobs = [{"problem": str(p.path), "mode": m, "out": str(_file_for(folder, p, m, precision, small)),
                 "warm": str(_warm_file(folder, p, precision, small)) if m == "compile" else None} for p, m in part]

        def show(n: int, base: int = done_before) -> None:
            bar.n = base + n
            bar.refresh()

        _measure_batch(jobs, folder, device, precision, small, budget_s, timeout_s, show if progress else None)
        done_before += len(jobs)
        show(0, done_before)
    bar.close()
    return folder


def _measure_job(p: Problem, job: dict, device: str, precision: str, small: bool, budget_s: float, shared: dict) -> dict:
    row = measure_one(p, job["mode"], device, precision, small, budget_s, shared)
    if job.get("warm"):
        try:
            info = json.loads(Path(job["warm"]).read_text())
        except (OSError, ValueError):
            info = {}
        row["compile_cold_s"] = info.get("compile_cold_s")
        if info.get("error") and not row.get("error"):
            row["error"] = f"parallel compile: {info['error']}"
    return row


def _release(device: str) -> None:
    """What one job leaves behind is not the next one's: compiled graphs, cached blocks."""
    import gc

    try:
        torch._dynamo.reset()
    except Exception:  # noqa: BLE001 - best effort
        pass
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def batch(jobs: list[dict], device: str, precision: str, small: bool, budget_s: float, timeout_s: float, inflight: Path) -> int:
    """The measuring child: jobs in order, each row written when known. A failed job ends the child
    (exit 3); a job past ``timeout_s`` is recorded by the watchdog, which then ends the child."""
    import os
    import threading

    shared: dict = {}
    current = None
    for job in jobs:
        if Path(job["out"]).exists():
            continue
        if job["problem"] != current:  # the modes of one problem share its reference and inputs
            shared.clear()
            _release(device)
            current = job["problem"]
        inflight.write_text(json.dumps(job))
        p = load_problem(job["problem"])

        def expire(job=job, p=p) -> None:
            _write(_failure_row(p, job["mode"], device, precision, small, "timeout", f"exceeded {timeout_s:g} s"), Path(job["out"]))
            os._exit(4)

        watchdog = threading.Timer(timeout_s, expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            row = _measure_job(p, job, device, precision, small, budget_s, shared)
        finally:
            watchdog.cancel()
        _write(row, Path(job["out"]))
        print(json.dumps({k: row.get(k) for k in ("problem", "mode", "runtime_ms", "failure")}), flush=True)
        if row.get("failure"):
            return 3
    inflight.unlink(missing_ok=True)
    return 0


def main(argv: list[str]) -> None:
    if argv and argv[0] == "warm":
        _, problem_path, device, precision, small, out = argv
        try:
            result = {"compile_cold_s": compile_once(load_problem(problem_path), device, precision, bool(int(small)))}
        except Exception as e:  # noqa: BLE001 - recorded; the timing process meets the same failure and records it
            result = {"error": f"{type(e).__name__}: {str(e)[:1500]}"}
        Path(out).write_text(json.dumps(result))
        return
    if not argv or argv[0] != "batch":
        raise SystemExit("usage: python -m kbench_lib.judging.baselines batch JOBS_JSON DEVICE PRECISION SMALL BUDGET TIMEOUT\n"
                         "       python -m kbench_lib.judging.baselines warm PROBLEM DEVICE PRECISION SMALL OUT_JSON")
    _, spec, device, precision, small, budget, timeout = argv
    jobs = json.loads(Path(spec).read_text())
    raise SystemExit(batch(jobs, device, precision, bool(int(small)), float(budget), float(timeout), Path(spec).parent / "inflight.json"))


if __name__ == "__main__":
    main(sys.argv[1:])
