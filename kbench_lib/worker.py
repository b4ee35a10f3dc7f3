"""The candidate's process: ``python -m kbench_lib.worker {build|run} JOBDIR``.

WARNING: this process imports and runs untrusted code. It is started by :mod:`kbench_lib.isolation.sandbox`
(scrubbed environment, private directory, limits, no network) and holds nothing worth stealing:
no expected output, no comparison. It receives a job (``job.json`` and one ``case_<i>.pt`` per
configuration and seed, written by the judge), runs ``ModelNew`` on each case's inputs, writes the
raw outputs (and the inputs as they are after the call) to ``out/``, times the default configuration
over a rotation of input sets (then each variant with timed sets in the job, ``time_variants``),
and reports events as JSON lines on the message pipe. The judge
decides everything else.

Everything the worker relies on after the candidate is imported is bound before the import
(torch functions, timers) and checked afterwards.

This module is the process's entry (its name is the command line: the sandbox routes it to the
fork server, the lane host and the adversarial tests look for it); the stages themselves are the
modules of :mod:`kbench_lib.isolation.worker`, whose names it re-exports for tests, benchmarks and
outside tools. Two globals are not re-exported, being rebound where they live: the message channel
(use :func:`channel`) and the operators a timed draw is checked on
(``kbench_lib.isolation.worker.drawing._DRAW_OPS``).
"""
from __future__ import annotations

from .isolation.worker.checks import _check_configs, _check_one, _STOPPED
from .isolation.worker.drawing import (
    _DRAWING_CLASSES, _DRAWING_MODULES, _DRAWING_OWN, _FACTORY_OPS, _TimedDraws, _callables, _draw_cases, _draw_inputs,
    _drawing_state, _drawing_tampered, _empty_like, _factory_overloads, _recording_ops, _same, _urandom)
from .isolation.worker.probes import (
    _child_processes, _context_usable, _descendants_cpu, _processes, _settings, _start_runtime_threads, _threads)
from .isolation.worker.report import (
    MAX_TRACE, Channel, _dumps, _failure_of, _is_build_error, _LoadError, _trace, _write, channel)
from .isolation.worker.results import (
    _ARENA, _OOM, _OUT_FD, SAMPLE_HEADROOM, _check_output, _clone, _detach, _inputs_after, _mem_get_info,
    _memory_allocated, _memory_reserved, _snapshot, _Tensor, _to, _to_cpu, _write_file, _write_tensors, poison_allocator)
from .isolation.worker.run import _empty_cache, _exit, _monotonic, import_candidate, main, run
from .isolation.worker.start import _await_gate, _os_read, _take_gate, _warm_imports
from .isolation.worker.tamper import _changed, _harness_objects, _leftover_flags
from .isolation.worker.timed import MEMO_MIN_MS, MEMO_RATIO, _time, timing_file, timing_groups

# the old module's names, at their old path (kbench_lib.worker.X)
__all__ = ["_check_configs", "_check_one", "_STOPPED", "_DRAWING_CLASSES", "_DRAWING_MODULES", "_DRAWING_OWN",
           "_FACTORY_OPS", "_TimedDraws", "_callables", "_draw_cases", "_draw_inputs", "_drawing_state",
           "_drawing_tampered", "_empty_like", "_factory_overloads", "_recording_ops", "_same", "_urandom",
           "_child_processes", "_context_usable", "_descendants_cpu", "_processes", "_settings",
           "_start_runtime_threads", "_threads", "MAX_TRACE", "Channel", "_dumps", "_failure_of", "_is_build_error",
           "_LoadError", "_trace", "_write", "channel", "_ARENA", "_OOM", "_OUT_FD", "SAMPLE_HEADROOM",
           "_check_output", "_clone", "_detach", "_inputs_after", "_mem_get_info", "_memory_allocated",
           "_memory_reserved", "_snapshot", "_Tensor", "_to", "_to_cpu", "_write_file", "_write_tensors",
           "poison_allocator", "_empty_cache", "_exit", "_monotonic", "import_candidate", "main", "run",
           "_await_gate", "_os_read", "_take_gate", "_warm_imports", "_changed", "_harness_objects",
           "_leftover_flags", "MEMO_MIN_MS", "MEMO_RATIO", "_time", "timing_file", "timing_groups"]

if __name__ == "__main__":
    main()
