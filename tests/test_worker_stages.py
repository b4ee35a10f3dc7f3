"""The worker's stages (kbench_lib.isolation.worker) and its tamper check: every function and
constant of every stage is among the objects the check compares by identity (a stage added later
without a place in the check fails here), and every name of the worker before it was cut into
stages is protected still, as the same object, at its home (the stage that defines it)."""
from __future__ import annotations

import importlib
import pkgutil

import kbench_lib.isolation.worker as stages_package
from kbench_lib.isolation.worker import report, tamper

# every top-level name of the worker's one module before it was cut into stages (commit 8fb73aa)
OLD_NAMES = (
    "_Tensor", "_detach", "_to", "_clone", "_empty_like", "_urandom", "_OOM", "_mem_get_info", "_memory_reserved",
    "_memory_allocated", "_empty_cache", "SAMPLE_HEADROOM", "_write_file", "_OUT_FD", "_ARENA", "_os_read", "_take_gate",
    "_await_gate", "_write_tensors", "_exit", "_monotonic", "_write", "_dumps", "MAX_TRACE", "MEMO_RATIO", "MEMO_MIN_MS",
    "Channel", "_channel", "channel", "_trace", "_is_build_error", "import_candidate", "_failure_of", "poison_allocator",
    "_check_output", "_to_cpu", "_snapshot", "_threads", "_settings", "_harness_objects", "_changed", "_processes",
    "_child_processes", "_descendants_cpu", "_start_runtime_threads", "run", "_STOPPED", "_check_configs", "_check_one",
    "_context_usable", "_leftover_flags", "timing_groups", "timing_file", "_time", "_draw_cases", "_FACTORY_OPS",
    "_DRAW_OPS", "_recording_ops", "_factory_overloads", "_draw_inputs", "_DRAWING_MODULES", "_DRAWING_CLASSES",
    "_callables", "_DRAWING_OWN", "_drawing_state", "_warm_imports", "_same", "_drawing_tampered", "_TimedDraws",
    "_inputs_after", "_LoadError", "main",
)
# each old name's home: the stage module that defines it
HOMES = {
    "checks": ("_check_configs", "_check_one", "_STOPPED"),
    "drawing": ("_DRAWING_CLASSES", "_DRAWING_MODULES", "_DRAWING_OWN", "_FACTORY_OPS", "_TimedDraws", "_callables",
                "_draw_cases", "_draw_inputs", "_drawing_state", "_drawing_tampered", "_empty_like", "_factory_overloads",
                "_recording_ops", "_same", "_urandom", "_DRAW_OPS"),
    "probes": ("_child_processes", "_context_usable", "_descendants_cpu", "_processes", "_settings",
               "_start_runtime_threads", "_threads"),
    "report": ("MAX_TRACE", "Channel", "_dumps", "_failure_of", "_is_build_error", "_LoadError", "_trace", "_write",
               "channel", "_channel"),
    "results": ("_ARENA", "_OOM", "_OUT_FD", "SAMPLE_HEADROOM", "_check_output", "_clone", "_detach", "_inputs_after",
                "_mem_get_info", "_memory_allocated", "_memory_reserved", "_snapshot", "_Tensor", "_to", "_to_cpu",
                "_write_file", "_write_tensors", "poison_allocator"),
    "run": ("_empty_cache", "_exit", "_monotonic", "import_candidate", "main", "run"),
    "start": ("_await_gate", "_os_read", "_take_gate", "_warm_imports"),
    "tamper": ("_changed", "_harness_objects", "_leftover_flags"),
    "timed": ("MEMO_MIN_MS", "MEMO_RATIO", "_time", "timing_file", "timing_groups"),
}
REBOUND = {"_channel", "_DRAW_OPS"}  # globals rebound where they live: protected by name, not by identity


def _stage_modules() -> list:
    return [importlib.import_module(f"{stages_package.__name__}.{m.name}") for m in pkgutil.iter_modules(stages_package.__path__)]


def test_every_stage_module_is_checked():
    """Each module of the package is one of the stages the check holds (or the check itself, run, or the entry)."""
    stages = {m.__name__ for m in _stage_modules()}  # each imported, as in the worker's process (the entry too)
    checked = {m.__name__ for m in tamper._stage_modules()}
    assert stages <= checked


def test_every_function_and_constant_of_every_stage_is_protected():
    objs = tamper._harness_objects()
    for mod in _stage_modules():
        for name, obj in vars(mod).items():
            if callable(obj) or name.startswith("_") or name.isupper():
                assert objs[f"{mod.__name__}.{name}"] is obj, f"{mod.__name__}.{name}"
    assert objs[f"{tamper.Channel.__module__}.Channel.send"] is vars(tamper.Channel)["send"]


def test_every_name_of_the_worker_before_its_split_is_protected_at_its_new_home():
    assert sorted(n for names in HOMES.values() for n in names) == sorted(OLD_NAMES)
    objs = tamper._harness_objects()
    protected = {id(v) for v in objs.values()}
    for stage, names in HOMES.items():
        home = importlib.import_module(f"{stages_package.__name__}.{stage}")
        for name in names:
            if name in REBOUND:
                assert f"{home.__name__}.{name}" in objs, name
                continue
            assert id(getattr(home, name)) in protected, name


def test_a_replaced_stage_function_is_caught():
    from kbench_lib.isolation.worker import results

    before = tamper._harness_objects()
    real = results._snapshot
    try:
        results._snapshot = lambda outs: outs
        assert "kbench_lib.isolation.worker.results._snapshot" in tamper._changed(before)
    finally:
        results._snapshot = real
    assert tamper._changed(before) == []


def test_a_patched_channel_send_is_caught():
    """15b's patch (``Channel.send`` replaced on the class, reached in the live worker's ``report`` stage)."""
    before = tamper._harness_objects()
    real = vars(report.Channel)["send"]
    try:
        report.Channel.send = lambda self, **msg: None
        assert "kbench_lib.isolation.worker.report.Channel.send" in tamper._changed(before)
    finally:
        report.Channel.send = real
    assert tamper._changed(before) == []
