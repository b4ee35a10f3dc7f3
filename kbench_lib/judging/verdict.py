"""A judgement's result and options: :class:`Verdict`, :class:`JudgeOptions`, the failure
categories (:data:`FAILURES`) and :class:`JudgeError` (the judge itself could not judge).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from . import guards
from ..measure.trials import BUDGET_S


FAILURES = (
    "compile_error", "load_error", "output_mismatch", "shape_mismatch", "dtype_mismatch", "nonfinite",
    "input_mutated", "runtime_error", "oom", "timeout", "crash",
)


class JudgeError(Exception):
    """The judge itself could not run (a broken problem, a missing device): no verdict."""


@dataclass
class JudgeOptions:
    device: str = "auto"
    precision: str = "fp32"
    small: bool | None = None  # None: SMALL configurations on the CPU, full size on a GPU
    n_seeds: int = 5  # fresh input sets for the default configuration
    timing_sets: int = 5  # further input sets, never seen before the timed calls, for the rotation
    variant_seeds: int = 1  # seeds per variant
    seed: int | None = None  # None: drawn fresh for every judgement
    build_timeout_s: float = 300.0
    run_timeout_s: float = 180.0
    # a worker whose processes use no CPU time for this long is ended as a timeout at once (a
    # sleeping or blocked hang; kbench_lib.isolation.idle): a hang need not cost run_timeout_s. 0: off
    idle_timeout_s: float = 10.0
    timing: bool = True
    warmup_ms: float = 25.0
    min_trials: int = 100
    max_trials: int = 2000
    timing_budget_s: float = BUDGET_S
    target_rse: float = 0.005
    # CUDA: keep every timed call's time, host issue time and spin in runtime_stats["trace"] (a
    # diagnostic of the timing itself)
    timing_trace: bool = False
    # outputs through a device arena shared with the worker alone (device_arena.py), where the
    # driver allows; off: through files in /dev/shm (page-locked copies)
    device_arena: bool = True
    compile_baseline: bool = False  # measure torch.compile when no stored baseline exists
    # also time the candidate and the eager baseline on every variant, each over never-seen input
    # sets of its own (plan.VARIANT_TIMING_SETS): per-variant speedups, for generalisation
    time_variants: bool = False
    baselines_root: str | None = None
    # the reference store (kbench_lib.judging.reference_store): the eager baselines and the
    # reference's profile measured once per key and reused by later batches and processes.
    # None: on CUDA devices only (a CPU clock shared with the machine's other work is not reused);
    # True: on any device; False: never read or written (--no-reference-store)
    reference_store: bool | None = None
    isolate_network: bool = True
    policy: guards.Policy = field(default_factory=guards.Policy)
    keep_workdir: bool = False
    # False: correctness and timing only, as a plain harness would judge (no static analysis, no
    # profile, no poisoning, no re-checks of timed outputs, no namespaces, no flags). For measuring
    # what the guards cost (benchmarks/guard_cost.py); never for results that are reported.
    guards: bool = True
    # which configurations at which tolerance decide ``correct`` (kbench_lib.scoring.protocols); every
    # configuration is checked and recorded whatever it is, so records read under any protocol
    protocol: str = "kbench"


@dataclass
class Verdict:
    problem: str
    level: str
    backend: str
    device: str
    device_name: str
    precision: str
    compiled: bool = False
    correct: bool = False
    failure: str | None = None
    flags: list = field(default_factory=list)
    message: str | None = None
    error: str | None = None
    max_abs_err: float | None = None
    runtime_ms: float | None = None
    runtime_stats: dict | None = None
    baseline_ms: float | None = None
    baseline_stats: dict | None = None
    baseline_compile_ms: float | None = None
    speedup: float | None = None
    speedup_compile: float | None = None
    seeds_checked: int = 0
    variants_checked: int = 0
    variants_declared: list = field(default_factory=list)  # names of the problem's own variants in this judgement
    variants_derived: list = field(default_factory=list)  # names of variants derived from its size constants (variants.py)
    # with time_variants: {variant name: {"runtime_ms", "baseline_ms", "speedup"}}, the eager speedup on each variant
    variant_timings: dict = field(default_factory=dict)
    small: bool = False
    seed: int | None = None
    build_s: float | None = None
    build_cached: bool = False
    build_log: str | None = None
    judge_s: float | None = None  # the judgement's own wall time, its wait for the GPU left out
    queue_s: float | None = None  # seconds its worker waited at the gate for the GPU (the previous candidate's timings)
    network_isolated: bool = False
    kernel_sha: str | None = None
    n_kernels: int | None = None  # device kernels launched by one forward (GPU only)
    custom_kernel_share: float | None = None  # share of that device time in kernels no ATen op launched
    top_kernels: list = field(default_factory=list)  # [[kernel name, share of device time], ...], heaviest first (GPU only)
    # what one forward ran (profiling.profile_call), the candidate's and the reference's: for the fusion analyses
    profile_ops: dict | None = None  # lowest ATen compute ops the candidate's forward ran: {name: count}
    profile_kernels: list | None = None  # its device kernels: [{name, op (launching ATen op or None), count, device_us}]
    reference_ops: dict | None = None
    reference_kernels: list | None = None
    reference_n_kernels: int | None = None
    sol_ms: float | None = None
    # seconds the judge spent in each stage (its own speed); a dotted name is a part of the stage it
    # names first (run_start.context, run_timing.device_clock): summing stages, leave those out
    stage_s: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)  # information that does not affect trust
    env: dict = field(default_factory=dict)
    protocol: str = "kbench"  # the protocol that decided ``correct`` (kbench_lib.scoring.protocols)
    # why a rejection happened: shape_specialisation, reduced_precision, else the failure category
    cause: str | None = None
    # per configuration: passed, failure, max_abs_err, tol_needed, ... (kbench_lib.scoring.protocols)
    configs: list = field(default_factory=list)

    @property
    def trusted(self) -> bool:
        return self.correct and not self.flags

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=str)


def _fail(v: Verdict, failure: str, message: str, log: str | None = None) -> Verdict:
    from ..core.tracebacks import candidate_frames_first  # the candidate's own frames first (harness frames trimmed)
    v.failure, v.correct = failure, False
    v.message = candidate_frames_first(message or "")[-4000:]
    if log:
        v.error = log[-8000:]
    return v
