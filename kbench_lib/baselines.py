"""Baselines: every problem's default configuration timed in modes ``eager``, ``compile`` and
``cudagraph``, with the judge's timing discipline, one row per (problem, mode) with provenance.

A sweep is resumable: each (problem, mode) is measured in its own process (a crash, a hang or an
out-of-memory in one never ends the sweep) and written to its own parquet file under
``<root>/<device-slug>/``; files that exist are skipped. ``baselines_store`` reads them back.

``compile`` spends most of its time in Inductor, on the CPU. With ``compile_jobs > 1`` the sweep
first compiles every pending problem in that many processes at once (nothing is timed then), into
an Inductor and Triton cache shared with the timing processes; the timing then runs one process at
a time, as always, and records both the cold compile time (``compile_cold_s``, from the parallel
phase) and the warm one (``compile_s``).

    python -m kbench_lib.baselines one PROBLEM_FILE MODE DEVICE PRECISION SMALL BUDGET OUT_FILE [WARM_JSON]
    python -m kbench_lib.baselines warm PROBLEM_FILE DEVICE PRECISION SMALL OUT_JSON
"""
from __future__ import annotations

import datetime as _dt
import json
import re
import sys
import time
from pathlib import Path

import torch

from .problems import Problem, load_problem
from .provenance import device_slug, environment, resolve_device
from .reference import build_reference, make_inputs, set_flags
from .tensors import to_device
from .timing import time_callable

MODES = ("eager", "compile", "cudagraph")
N_INPUT_SETS = 3


def _file_for(root: Path, problem: Problem, mode: str, precision: str, small: bool) -> Path:
    key = re.sub(r"[^A-Za-z0-9_.-]+", "__", problem.key)
    return root / f"{mode}-{precision}{'-small' if small else ''}-{key}.parquet"


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


def measure_one(problem: Problem, mode: str, device: str, precision: str = "fp32", small: bool = False, budget_s: float = 5.0) -> dict:
    """Time one mode of one problem in this process; returns the row (runtime or failure)."""
    from .roofline import count, measured_spec_for, sol_ms, spec_for

    row = {
        "problem": problem.key, "level": problem.level, "mode": mode, "precision": precision, "small": small,
        "task": problem.task, "device": device, "runtime_ms": None, "device_ms": None, "failure": None, "error": None,
        "compile_s": None,
    }
    row.update(environment(device))
    row["date"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    cfg = problem.configs(small=small)[0]
    try:
        c = count(problem, cfg.overrides, 2 if precision != "fp32" else None)
        row["flops"], row["bytes"] = c["flops"], c["bytes"]
        spec = spec_for(row["device_name"]) if device.startswith("cuda") else None
        if spec:
            row["sol_ms"], row["bound"] = sol_ms(c["flops"], c["bytes"], spec, precision)
            row["sol_measured_ms"] = sol_ms(c["flops"], c["bytes"], measured_spec_for(row["device_name"]), precision)[0]
    except Exception as e:  # noqa: BLE001 - a missing bound is recorded, the timing goes on
        row["error"] = f"roofline: {type(e).__name__}: {str(e)[:300]}"
    try:
        set_flags()
        model, _, _ = build_reference(problem, cfg, 0, 1, device, precision)
        sets = [to_device(make_inputs(problem, cfg, 1 + 7919 * k, precision), device) for k in range(N_INPUT_SETS)]
        backward = problem.task == "backward"
        if backward:
            if mode == "cudagraph":
                raise NotImplementedError("cudagraph mode times forward-only tasks")
            for s in sets:
                _require_grad(s)
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
                   runtime_min_ms=t.min_ms, n_trials=t.n_trials, rse=t.rse, device_ms=t.device_ms, remeasured=t.remeasured)
    except torch.cuda.OutOfMemoryError as e:
        row["failure"], row["error"] = "oom", str(e)[:2000]
    except NotImplementedError as e:
        row["failure"], row["error"] = "unsupported", str(e)[:2000]
    except Exception as e:  # noqa: BLE001 - every mode's failure is a row, never a crash of the sweep
        row["failure"], row["error"] = "runtime_error", f"{type(e).__name__}: {str(e)[:2000]}"
    return row


def _require_grad(inputs: list) -> None:
    for t in inputs:
        if isinstance(t, torch.Tensor) and t.is_floating_point():
            t.requires_grad_(True)


def _compile_and_call(model, inputs: list, backward: bool, device: str):
    """(the model under torch.compile, seconds its first call took: the compile), forward and, for
    backward tasks, backward."""
    compiled = torch.compile(model)
    t0 = time.monotonic()
    if backward:
        out = compiled(*inputs)
        torch.autograd.backward(list(out) if isinstance(out, (list, tuple)) else [out])
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
    cfg = problem.configs(small=small)[0]
    model, _, _ = build_reference(problem, cfg, 0, 1, device, precision)
    inputs = to_device(make_inputs(problem, cfg, 1, precision), device)
    backward = problem.task == "backward"
    if backward:
        _require_grad(inputs)
    return _compile_and_call(model, inputs, backward, device)[1]


def _cache_env(folder: Path) -> dict[str, str]:
    """One Inductor and Triton cache for every process of a sweep (each process has its own TMPDIR,
    where Inductor would otherwise keep its cache)."""
    cache = folder / ".work" / "cache"
    return {"TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "TRITON_CACHE_DIR": str(cache / "triton")}


def _warm_file(folder: Path, problem: Problem, precision: str, small: bool) -> Path:
    return folder / ".work" / _file_for(Path("warm"), problem, "compile", precision, small).with_suffix(".json").name


def prewarm_compile(problems: list[Problem], device: str, precision: str, small: bool, folder: Path, jobs: int,
                    timeout_s: float, progress: bool = True) -> None:
    """Compile every problem in ``jobs`` processes at once, into the sweep's shared caches; each
    writes its cold compile time (or its failure) to a JSON file the timing process reads."""
    from concurrent.futures import ThreadPoolExecutor

    from tqdm.auto import tqdm

    from . import sandbox

    def one(p: Problem) -> None:
        out = _warm_file(folder, p, precision, small)
        if out.exists():
            return
        workdir = folder / ".work" / f"warm-{out.stem}"
        res = sandbox.run_isolated(
            ["-m", "kbench_lib.baselines", "warm", str(p.path), device, precision, str(int(small)), str(out)],
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


def sweep(problems: list[Problem], modes=MODES, device: str = "auto", precision: str = "fp32", small: bool | None = None,
          root: str | Path | None = None, timeout_s: float = 600.0, budget_s: float = 5.0, progress: bool = True,
          compile_jobs: int = 0) -> Path:
    """Measure every (problem, mode) not yet on disk; returns the device's baseline folder.
    ``compile_jobs > 1``: compile the pending ``compile`` rows that many at a time first."""
    from tqdm.auto import tqdm

    from . import sandbox
    from .baselines_store import DEFAULT_ROOT

    device = resolve_device(device)
    small = (not device.startswith("cuda")) if small is None else small
    folder = (Path(root or DEFAULT_ROOT) / device_slug(device)).resolve()
    todo = [(p, m) for p in problems for m in modes if not _file_for(folder, p, m, precision, small).exists()]
    if compile_jobs > 1:
        prewarm_compile([p for p, m in todo if m == "compile"], device, precision, small, folder, compile_jobs, timeout_s, progress)
    for p, m in tqdm(todo, desc="baselines", unit="run", disable=not progress):
        path = _file_for(folder, p, m, precision, small)
        workdir = folder / ".work"
        warm = _warm_file(folder, p, precision, small)
        res = sandbox.run_isolated(
            ["-m", "kbench_lib.baselines", "one", str(p.path), m, device, precision, str(int(small)), str(budget_s), str(path),
             *([str(warm)] if m == "compile" and warm.exists() else [])],
            workdir=str(workdir), timeout_s=timeout_s, env_extra=_cache_env(folder), isolate_network=False,
        )
        if not path.exists():  # the measuring process died or hung: the failure is the row
            env = environment(device)
            row = {"problem": p.key, "level": p.level, "mode": m, "precision": precision, "small": small, "task": p.task,
                   "device": device, "runtime_ms": None, **env,
                   "failure": "timeout" if res.timed_out else "crash",
                   "error": (f"exceeded {timeout_s:g} s" if res.timed_out else f"exit {res.returncode}: ") + res.log[-1500:],
                   "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
            _write(row, path)
    return folder


def main(argv: list[str]) -> None:
    if argv and argv[0] == "warm":
        _, problem_path, device, precision, small, out = argv
        try:
            result = {"compile_cold_s": compile_once(load_problem(problem_path), device, precision, bool(int(small)))}
        except Exception as e:  # noqa: BLE001 - recorded; the timing process meets the same failure and records it
            result = {"error": f"{type(e).__name__}: {str(e)[:1500]}"}
        Path(out).write_text(json.dumps(result))
        return
    if not argv or argv[0] != "one":
        raise SystemExit("usage: python -m kbench_lib.baselines one PROBLEM MODE DEVICE PRECISION SMALL BUDGET OUT [WARM_JSON]\n"
                         "       python -m kbench_lib.baselines warm PROBLEM DEVICE PRECISION SMALL OUT_JSON")
    _, problem_path, mode, device, precision, small, budget, out, *warm = argv
    row = measure_one(load_problem(problem_path), mode, device, precision, bool(int(small)), float(budget))
    if warm:
        try:
            info = json.loads(Path(warm[0]).read_text())
        except (OSError, ValueError):
            info = {}
        row["compile_cold_s"] = info.get("compile_cold_s")
        if info.get("error") and not row.get("error"):
            row["error"] = f"parallel compile: {info['error']}"
    _write(row, Path(out))
    print(json.dumps({k: row[k] for k in ("problem", "mode", "runtime_ms", "failure")}))


if __name__ == "__main__":
    main(sys.argv[1:])
