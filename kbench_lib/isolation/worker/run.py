"""The worker's stages in order: :func:`run` (one job, build or run mode) and :func:`main` (the
process's entry: ``python -m kbench_lib.isolation.worker {build|run} JOBDIR`` through :mod:`.__main__`,
or the fork server's child).

A run reads its job, prepares the device, draws every checked input set, opens the out folder and
takes its snapshots (threads, numerics settings, the harness's objects), all before the candidate
is imported; then imports the candidate, checks every configuration, waits for the judge's gate,
profiles and times, and reports ``done`` with what the candidate left behind.
"""
from __future__ import annotations

import importlib.util
import os
import sys

import torch

from ...measure import device_arena, timing  # bound before any candidate code runs
from .checks import _check_configs, _model_maker, _settings_watch, _STOPPED
from . import extension_cache
from .drawing import _draw_cases, _drawing_state, _TimedDraws
from .lazy_compile import call_on_fake, compiles_lazily
from .probes import _settings, _start_runtime_threads, _threads
from .report import _BACKEND, Channel, _failure_of, _is_build_error, _LoadError, _trace, channel
from .results import _ARENA
from .start import (_await_gate, _import_backend, _open_out_folder, _prepare_device, _read_job, _take_gate, _warm_imports,
                    compile_in_process)
from .tamper import _harness_objects, _leftover_flags
from .timed import _profile, _time, timing_groups
from ...suite.problems import model_name

_empty_cache = torch.cuda.empty_cache
_exit = os._exit
_monotonic = timing._monotonic  # the clock bound before any candidate code runs


def import_candidate(path: str):
    spec = importlib.util.spec_from_file_location("kbench_candidate", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["kbench_candidate"] = module
    spec.loader.exec_module(module)
    return module


def run(mode: str, jobdir: str) -> int:
    t_main = _monotonic()
    chan = channel()
    gate = _take_gate()
    job, device, backward, dtype = _read_job(jobdir, mode)
    _BACKEND[0] = job.get("backend")  # how its failures read (report._failure_of, report._trace)
    _prepare_device(device)
    t_arena = _monotonic()
    _ARENA[:] = [device_arena.attach_from_env(device)]  # mapped (its descriptor closed) before any candidate code
    t_context = _monotonic()
    # every checked input set is drawn now, before the candidate exists (it cannot steer or observe
    # the drawing), by the judge's own code and seeds; the fingerprints prove both hold the same
    # data. Timed sets are drawn just before their first timed calls (_TimedDraws): one that
    # existed now could be found by the candidate and answered ahead, off the clock
    loaded = _draw_cases(job, device) if mode == "run" else []
    t_drawn = _monotonic()
    if mode == "run":
        _warm_imports()
    compile_in_process()
    backend_failed = _import_backend(job.get("backend"))  # a DSL's package, before the snapshots below
    drawing = _drawing_state(loaded)  # what drawing the timed sets later relies on, as it is now
    if mode == "run":  # a timed set's fingerprints come when it is drawn (timed_inputs)
        chan.send(event="inputs", cases=[{"inputs": c["fingerprints"], "state": c["state_sums"]} for c in loaded])
    outdir = os.path.join(jobdir, "out")
    if not _open_out_folder(outdir, mode, chan):
        return 0
    t_imported = _monotonic()
    source = _source(job.get("candidate_path"))  # read before the candidate can rewrite it
    # before the harness's snapshot and the candidate: its JIT builds go through the cache
    extension_cache.install(pid_names=extension_cache.names_by_pid(source))
    _start_runtime_threads(device, job.get("profile", True))
    threads_before = _threads()
    settings = _settings()
    harness = _harness_objects()
    # where the start went (the judge's own speed): the device context and clock, the drawn input
    # sets, late imports, the runtime's threads and the harness's snapshots
    parts = {"context": t_arena - t_main, "draw": t_drawn - t_context, "imports": t_imported - t_drawn,
             "threads": _monotonic() - t_imported}
    if _ARENA[0] is not None:  # outputs go to the judge's device arena (its mapping took this long)
        parts["arena"] = t_context - t_arena
    chan.send(event="stage", stage="build" if mode == "build" else "load", parts={k: round(v, 4) for k, v in parts.items()})
    ModelNew = _load_candidate(job, mode, chan, backend_failed, source)
    if ModelNew is None:
        return 0

    flags: list[str] = []
    cases = job["cases"]
    make_model = _model_maker(ModelNew, device, dtype)
    check_settings = _settings_watch(settings, flags)
    failed = _check_configs(cases, loaded, make_model, device, backward, outdir, chan, flags, check_settings, job)
    if failed is _STOPPED:
        chan.send(event="done", flags=flags + _leftover_flags(harness, threads_before))
        return 0
    groups = timing_groups(cases)
    if cases and _gate_config(cases, groups) in failed:  # the timed configuration failed: nothing is timed
        chan.send(event="done", flags=flags + _leftover_flags(harness, threads_before))
        return 0

    timed, warm = (groups[0][1], groups[0][2]) if groups else ([], [])
    profile = job.get("profile", True)
    if not timed and profile:  # no timed sets (timing off): the guards' profile still runs, on a checked set
        warm = [i for i, m in enumerate(cases) if not m.get("timed") and m["config"] == cases[0]["config"]]
    if timed or (profile and warm):
        _await_gate(gate, chan)
    if profile and (timed or warm):
        if not _profile_stage(job, loaded, timed, warm, make_model, device, chan, flags):
            return 0
    if timed and job.get("timing", {}).get("enabled", True):
        if not _time_configs(job, loaded, groups, failed, make_model, device, backward, drawing, outdir, chan, flags,
                             check_settings, harness, threads_before):
            return 0

    chan.send(event="done", flags=flags + _leftover_flags(harness, threads_before))
    return 0


def _gate_config(cases: list[dict], groups: list) -> str:
    """The configuration whose checks decide whether the candidate is timed: the timed
    configuration where it was checked itself (the default's eval configuration, under a protocol
    that times in eval mode), else the configuration whose model it runs (the default's)."""
    if not groups:
        return cases[0]["config"]
    name = groups[0][0]
    checked = any(not m.get("timed") and m["config"] == name for m in cases)
    return name if checked else model_name(name)


def _construct_once(module, job: dict):
    """Build mode: one ``ModelNew`` made with the problem's init inputs, on the CPU side as its
    ``__init__`` leaves it, so that extensions compiled in ``__init__`` land in the cache with those
    compiled at import (:mod:`.extension_cache`) and the run loads them instead of compiling on the
    judge's lane. The problem's module where the model was made (for the warm-up call under fake
    tensors, :func:`.lazy_compile.call_on_fake`), else None. Whatever it raises is the run's to
    report, not the build's."""
    path, ModelNew = job.get("problem_path"), getattr(module, "ModelNew", None)
    if not path or not isinstance(ModelNew, type):
        return None
    try:
        spec = importlib.util.spec_from_file_location("kbench_build_problem", path)
        problem = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(problem)
        torch.manual_seed(0)
        ModelNew(*problem.get_init_inputs())
    except BaseException:  # noqa: BLE001 - the run makes its models again and reports what they raise
        return None
    return problem


def _source(path: str | None) -> str:
    """The candidate's source, read before its import (after it, the candidate could have rewritten
    it); empty where unreadable (its import then fails as it would have)."""
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _reads_lazily(source: str) -> bool:
    """Build mode, before the import: whether the candidate's source compiles an extension only at
    its first call (:func:`.lazy_compile.compiles_lazily`)."""
    try:
        return compiles_lazily(source)
    except Exception:  # noqa: BLE001 - too deep for the parser: no warm-up, the run compiles
        return False


def _load_candidate(job: dict, mode: str, chan: Channel, backend_failed: str | None = None, source: str = "") -> type | None:
    """Imports the candidate; its ``ModelNew`` class in run mode. None where the import failed (a
    ``load_error`` or ``compile_error`` reported), in build mode (``built`` reported), or where it
    defines no ``ModelNew(nn.Module)``. ``backend_failed``: why the backend's DSL package did not
    import (:func:`.start._import_backend`): the candidate is not imported, a ``compile_error``.
    ``source``: the candidate's source as read before any of its code ran (:func:`_source`). In
    build mode ``built`` is reported before the warm-up call under fake tensors (:mod:`.lazy_compile`),
    made only for a source that compiles at its first call: whatever that call does (a raise, a
    crash, a hang) the build is done."""
    if backend_failed:
        chan.send(event="failure", failure="compile_error", message=backend_failed)
        return None
    lazy = mode == "build" and _reads_lazily(source)
    try:
        module = import_candidate(job["candidate_path"])
    except SyntaxError as e:
        chan.send(event="failure", failure="load_error", message=f"syntax error in candidate: {e}")
        return None
    except BaseException as e:  # noqa: BLE001 - the candidate's import may raise anything
        if isinstance(e, SystemExit):
            chan.send(event="failure", failure="load_error", message=f"candidate called sys.exit({e.code}) at import")
            return None
        cat = "compile_error" if _is_build_error(e) else "load_error"
        chan.send(event="failure", failure=cat, message=_trace(e))
        return None
    if mode == "build":
        problem = _construct_once(module, job)
        chan.send(event="built")  # the build's result, sent (os.write) before the warm-up runs
        if lazy and problem is not None:
            call_on_fake(module.ModelNew, problem, job.get("device") or "cpu")
        return None
    ModelNew = getattr(module, "ModelNew", None)
    if not isinstance(ModelNew, type) or not issubclass(ModelNew, torch.nn.Module):
        chan.send(event="failure", failure="load_error", message="candidate defines no class ModelNew(nn.Module)")
        return None
    return ModelNew


def _profile_stage(job, loaded, timed, warm, make_model, device, chan: Channel, flags: list[str]) -> bool:
    """The profile of the default configuration (:func:`.timed._profile`). It ran correctly before:
    a profile that fails is a flag. False where the candidate exited (a ``crash`` reported)."""
    chan.send(event="stage", stage="profile")
    try:
        _profile(job, loaded, timed, warm, make_model, device, chan)
    except BaseException as e:  # noqa: BLE001 - it ran correctly before: a profile failure is a flag
        if isinstance(e, SystemExit):
            chan.send(event="failure", failure="crash", message=f"candidate called sys.exit({e.code})")
            return False
        flags.append(f"profile_failed: {type(e).__name__}: {str(e)[:200]}")
    return True


def _time_configs(job, loaded, groups, failed, make_model, device, backward, drawing, outdir, chan: Channel,
                  flags: list[str], check_settings, harness, threads_before: int) -> bool:
    """Times every configuration with timed sets that passed its checks (:func:`.timed._time`), the
    default last; False where a timed run failed (its failure reported)."""
    cases = job["cases"]
    try:
        # the default configuration is timed last: once its samples are in timing.kbt no more
        # candidate code runs, so a later call cannot rewrite the file that decides its
        # speedup (the variants' files stay open to that; they feed analyses only)
        order = list(enumerate(groups))
        for k, (config, timed, warm) in order[1:] + order[:1]:
            if config in failed:
                continue  # a variant that failed its checks is not timed
            chan.send(event="stage", stage="timing" if k == 0 else "variant_timing", config=config)
            draws = _TimedDraws(loaded, cases, timed, job, device, backward, drawing, flags)
            found = _time(job, loaded, draws, warm, make_model, device, backward, outdir, chan, variant=config if k else None)
            flags.extend(f if k == 0 else f"{f} [{config}]" for f in found)
            if k and device.type == "cuda":  # a variant's sets and samples leave the cache before the default is timed
                _empty_cache()
            check_settings("during timing" if k == 0 else f"during the timing of {config}")
    except _LoadError as e:
        chan.send(event="failure", failure="load_error", message=str(e))
        return False
    except BaseException as e:  # noqa: BLE001 - on the default configuration or a variant: the candidate's failure
        where = f"while timing variant {config}: " if k else f"[{config}] while timing: "
        if isinstance(e, SystemExit):
            chan.send(event="failure", failure="crash", message=f"{where}candidate called sys.exit({e.code})")
            return False
        chan.send(event="failure", failure=_failure_of(e), message=where + _trace(e), flags=_leftover_flags(harness, threads_before))
        return False
    return True


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    mode, jobdir = argv[0], argv[1]
    try:
        code = run(mode, jobdir)
    except BaseException as e:  # noqa: BLE001 - a fault of the harness itself, not a verdict
        sys.stderr.write(_trace(e))
        try:
            channel().send(event="harness_error", message=_trace(e))
        except Exception:  # noqa: BLE001
            pass
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    _exit(code)  # never wait for threads the candidate left behind
