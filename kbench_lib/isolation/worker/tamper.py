"""The harness's objects by identity, and what the candidate left behind (threat #12, #14).

:func:`_harness_objects` is read before the candidate is imported and again after its calls: every
function and constant of the worker's stages (:data:`STAGES`, this module and the entry module
``kbench_lib.isolation.worker.__main__``), of the measuring modules it calls (timing, its trials and
its device clock, host speed, unjoined check and summary, profiling, compare, tensorfile, device
arena, tensors, reference) and the torch entry points they call. A candidate that replaces any of
them (to fake a time, a profile or a message) is flagged ``harness_tampered``.
"""
from __future__ import annotations

import inspect
import json
import os
import sys

import torch

from ...measure import compare, device_arena, device_clock, host_speed, profiling, tensorfile, timing, timing_summary, trials, unjoined  # bound before any candidate code runs
from . import checks, drawing, extension_cache, lazy_compile, probes, report, results, start, timed
from .probes import _child_processes, _threads
from .report import Channel
from .results import _ARENA

# the worker's stages, bound here; the one that imports this module (``run``) and the entry module
# are found by name in _stage_modules (importing them here would be an import cycle)
STAGES = (report, start, drawing, results, probes, checks, timed, extension_cache, lazy_compile)
RUN_STAGE = __package__ + ".run"
ENTRY = __package__ + ".__main__"  # ``python -m kbench_lib.isolation.worker``: the module __main__ is when run so


def _stage_modules() -> list:
    """The worker's own modules: its stages, this one, ``run``, and the entry module (as
    ``kbench_lib.isolation.worker.__main__`` where imported, as ``__main__`` where the worker runs
    as a script)."""
    mods = [*STAGES, sys.modules[__name__]]
    if RUN_STAGE in sys.modules:  # gone after the snapshot: every one of its names reads as changed
        mods.append(sys.modules[RUN_STAGE])
    main = sys.modules.get("__main__")
    if getattr(getattr(main, "__spec__", None), "name", None) == ENTRY:
        mods.append(main)
    if ENTRY in sys.modules:
        mods.append(sys.modules[ENTRY])
    return mods


def _harness_objects() -> dict:
    """Every function the harness relies on after the candidate is imported, by identity
    (threat #14): the worker's own modules', the timing, profiling and compare (input
    fingerprints) modules', and the torch entry points they call."""
    objs = {}
    for mod in {*_stage_modules(), timing, trials, device_clock, host_speed, unjoined, timing_summary, profiling, compare, tensorfile,
                device_arena}:
        for name, obj in vars(mod).items():
            if callable(obj) or name.startswith("_") or name.isupper():  # constants too: UNJOINED_SHARE, DRIFT, ...
                objs[f"{mod.__name__}.{name}"] = obj
    objs[f"{Channel.__module__}.Channel.send"] = inspect.getattr_static(Channel, "send")
    arena = _ARENA[0] if _ARENA else None
    objs["device_arena: the arena"], objs["device_arena: its tensor"] = arena, getattr(arena, "tensor", None)
    for name in ("take", "view"):
        objs[f"device_arena.Arena.{name}"] = inspect.getattr_static(device_arena.Arena, name)
    for name in dir(torch.Tensor):  # through its bases: fingerprints call Tensor methods (__int__, view, ...)
        objs[f"torch.Tensor.{name}"] = inspect.getattr_static(torch.Tensor, name, None)
    for mod in ("kbench_lib.measure.tensors", "kbench_lib.suite.reference"):
        for name, obj in vars(sys.modules[mod]).items():
            objs[f"{mod}.{name}"] = obj
    for owner, names in (
        (torch.Tensor, ("to", "detach", "clone", "cpu", "untyped_storage", "copy_", "__torch_function__",
                        "view", "contiguous", "reshape", "sum", "element_size", "__mul__", "__and__", "__iadd__", "__getitem__",
                        "numel", "is_complex", "narrow")),
        (torch, ("frombuffer", "equal", "allclose", "isfinite", "manual_seed", "zeros", "arange", "view_as_real")),
        (torch.cuda, ("synchronize", "Event", "mem_get_info")),
        (os, ("write", "urandom", "listdir", "_exit")),
        (json, ("dumps",)),
    ):
        for name in names:  # getattr_static: the stored object itself, not a fresh bound method
            objs[f"{getattr(owner, '__name__', owner)}.{name}"] = inspect.getattr_static(owner, name, None)
    return objs


def _changed(before: dict) -> list[str]:
    now = _harness_objects()
    return sorted(k for k, v in before.items() if now.get(k) is not v)


def _leftover_flags(harness, threads_before: int) -> list[str]:
    """What the candidate left behind: changed timer bindings or harness objects, processes and
    threads still running. Checked after the calls, and also when a call failed (a candidate that
    defers its work to a thread can exhaust memory before it is caught any other way)."""
    flags = []
    tampered = timing.tampered_bindings()
    if tampered:
        flags.append("timer_tampered: " + ", ".join(tampered))
    changed = _changed(harness)
    if changed:
        flags.append("harness_tampered: " + ", ".join(changed[:12]))
    children = _child_processes()
    if children:
        flags.append(f"processes_started: {len(children)} process(es) the candidate started are still running")
    threads_after = _threads()
    if threads_after > threads_before:
        flags.append(f"threads_started: {threads_after - threads_before} thread(s) still running after the calls")
    return flags
