"""Before the candidate exists: the job read (and its file removed), the device and its context
made ready, the judge's gate, the out folder opened, the modules a forked worker has already, and a
DSL backend's package."""
from __future__ import annotations

import importlib
import json
import os
import sys

import torch

from ...core import dsl_packages
from ...measure import timing
from ...measure.tensors import dtype_of
from ...suite.reference import set_flags
from .report import Channel
from .results import _OUT_FD

_os_read = os.read  # bound before any candidate code runs


def _take_gate() -> int | None:
    """The gate's descriptor (``sandbox.start_isolated(gated=True)``), taken out of the environment
    before the candidate exists; None when the judge runs this worker alone."""
    fd = os.environ.pop("KBENCH_GATE_FD", None)
    try:
        return int(fd) if fd is not None else None
    except ValueError:
        return None


def _await_gate(fd: int | None, chan) -> None:
    """Waits until the judge opens the gate: in a batch this process's start and correctness calls
    may run beside the judge's own work on the previous candidate, never its profile or timed calls.
    A candidate that closes or drains the gate only makes its own wait end early (its timing then
    shares the GPU with that work, which can only slow it) or never (its run's time limit ends it)."""
    if fd is None:
        return
    chan.send(event="stage", stage="gate")
    try:
        _os_read(fd, 1)
    except OSError:
        pass


def _read_job(jobdir: str, mode: str) -> tuple[dict, torch.device, bool, torch.dtype]:
    """(the job, its device with an index, whether it is a backward task, its dtype); in run mode
    ``job.json`` is deleted once read (the candidate never finds it)."""
    with open(os.path.join(jobdir, "job.json")) as f:
        job = json.load(f)
    device = torch.device(job["device"])
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    backward = job["task"] == "backward"
    dtype = dtype_of(job["precision"])
    if mode == "run":
        os.unlink(os.path.join(jobdir, "job.json"))
    return job, device, backward, dtype


def _prepare_device(device: torch.device) -> None:
    """The judge's numerics flags set; on CUDA the context and the end-to-end clock's head start
    made before any candidate code; on the CPU uninitialised memory filled with NaN."""
    set_flags()
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.empty(1, device=device)  # create the context before the candidate runs
        timing.prepare(device)  # the end-to-end clock's head start, loaded before any candidate code
    else:
        # CPU: memory torch.empty hands out is filled with NaN, as the allocator poison does on CUDA
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = True


def _open_out_folder(outdir: str, mode: str, chan: Channel) -> bool:
    """Opens the job's ``out`` folder (run mode) for the result files, before the candidate is
    imported; False (a ``crash`` reported) where the build's import replaced it."""
    _OUT_FD.clear()
    if mode == "run":
        try:
            os.makedirs(outdir, exist_ok=True)  # a file or dangling link planted at import raises here
            _OUT_FD.append(os.open(outdir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC))
        except OSError as e:  # replaced by the candidate's import during the build (a symlink)
            chan.send(event="failure", failure="crash", message=f"the job's out folder is not a folder: {e.strerror}")
            return False
    return True


def _warm_imports() -> None:
    """The modules the fork server imports before any fork (a forked worker has them already):
    imported later, by the profiler or a candidate's torch.compile, torch._dynamo rebinds
    ``torch.manual_seed``, which the check around each timed draw would read as tampering."""
    from ..process_setup import WARM_IMPORTS

    for name in WARM_IMPORTS:
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - an optional package missing here (triton on a CPU machine)
                pass


def compile_in_process() -> None:
    """Inductor's compiles (a candidate's ``torch.compile``) kept in this process: its
    ``compile_threads`` set to 1, so it starts no pool of compile processes, which would outlive
    the calls (the ``processes_started`` and ``threads_started`` checks). max-autotune still
    precompiles its choices on ``TORCHINDUCTOR_COMPILE_THREADS`` threads
    (:func:`kbench_lib.judging.build.build_env`), a pool that ends with the compile: Inductor reads
    that count from the environment, not from its config. Where this process has not imported
    Inductor's config (a build), nothing is imported for it."""
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.compile_threads = 1


def _import_backend(backend: str | None) -> str | None:
    """A DSL backend's package (:mod:`kbench_lib.core.dsl_packages`) imported before the harness's
    snapshots and the candidate: what its import does to the process (an exception hook, torch
    integrations, modules of its own) is the harness's starting state, not the candidate's doing,
    which the checks around each timed draw and after the calls would otherwise read as tampering.
    The failure in one line (a ``compile_error``'s message) where it does not import; None where it
    does, or the backend is not a DSL."""
    pkg = dsl_packages.PACKAGES.get(backend or "")
    if pkg is None:
        return None
    try:
        for name in pkg.modules:
            importlib.import_module(name)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] == pkg.modules[0]:
            return dsl_packages.missing_message(pkg.backend)
        return f"the {pkg.backend} backend's package ({dsl_packages.described(pkg.backend)}) failed to import: {type(e).__name__}: {e}"
    except Exception as e:  # noqa: BLE001 - a broken or mismatched install raises anything
        first = str(e).strip().splitlines()[0][:500] if str(e).strip() else ""
        return f"the {pkg.backend} backend's package ({dsl_packages.described(pkg.backend)}) failed to import: {type(e).__name__}: {first}"
    return None
