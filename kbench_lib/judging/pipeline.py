"""Judging one candidate against one problem: static -> build -> load -> correctness -> timing -> guards.

The judge's process owns the reference: it builds the problem's Model, draws fresh seeds, computes
the expected outputs (and gradients, for backward tasks), and times the eager baseline. The
candidate runs in a separate, isolated worker process (:mod:`kbench_lib.worker`, started through
:mod:`kbench_lib.sandbox`) that never sees an expected value; its raw outputs come back as plain
tensors and are compared here, element by element.
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import stat
import tempfile
import threading
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from .. import protocols
from ..isolation import sandbox, server_pool
from . import build, config_checks, guards
from ..measure import device_arena, profiling, tensorfile
from ..build_claim import BuildClaim
from ..candidates import Candidate
from ..measure.compare import fingerprint, is_fingerprint, measure_outputs, unchanged
from ..isolation.idle import IDLE_CPU_S
from .prepared import PreparedProblem, prepare
from ..suite.problems import Problem, ProblemError
from ..provenance import device_name, environment, resolve_device
from ..measure.tensors import nbytes, tensors_in
from ..worker import timing_file

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
    # sleeping or blocked hang; kbench_lib.idle): a hang need not cost run_timeout_s. 0: off
    idle_timeout_s: float = 10.0
    timing: bool = True
    warmup_ms: float = 25.0
    min_trials: int = 100
    max_trials: int = 2000
    timing_budget_s: float = 10.0
    target_rse: float = 0.005
    # CUDA: keep every timed call's time, host issue time and spin in runtime_stats["trace"] (a
    # diagnostic of the timing itself; benchmarks/compile_first_round.py)
    timing_trace: bool = False
    # outputs through a device arena shared with the worker alone (device_arena.py), where the
    # driver allows; off: through files in /dev/shm (page-locked copies), as before
    device_arena: bool = True
    compile_baseline: bool = False  # measure torch.compile when no stored baseline exists
    # also time the candidate and the eager baseline on every variant, each over never-seen input
    # sets of its own (prepared.VARIANT_TIMING_SETS): per-variant speedups, for generalisation
    time_variants: bool = False
    baselines_root: str | None = None
    isolate_network: bool = True
    policy: guards.Policy = field(default_factory=guards.Policy)
    keep_workdir: bool = False
    # False: correctness and timing only, as a plain harness would judge (no static analysis, no
    # profile, no poisoning, no re-checks of timed outputs, no namespaces, no flags). For measuring
    # what the guards cost (benchmarks/guard_cost.py); never for results that are reported.
    guards: bool = True
    # which configurations at which tolerance decide ``correct`` (kbench_lib.protocols); every
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
    judge_s: float | None = None
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
    protocol: str = "kbench"  # the protocol that decided ``correct`` (kbench_lib.protocols)
    # why a rejection happened: shape_specialisation, reduced_precision, else the failure category
    cause: str | None = None
    # per configuration: passed, failure, max_abs_err, tol_needed, ... (kbench_lib.protocols)
    configs: list = field(default_factory=list)

    @property
    def trusted(self) -> bool:
        return self.correct and not self.flags

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=str)


def _fail(v: Verdict, failure: str, message: str, log: str | None = None) -> Verdict:
    from ..tracebacks import candidate_frames_first  # the candidate's own frames first (harness frames trimmed)
    v.failure, v.correct = failure, False
    v.message = candidate_frames_first(message or "")[-4000:]
    if log:
        v.error = log[-8000:]
    return v


def _syntax_error(source: str) -> str | None:
    """The message the worker gives a candidate that does not parse, found without running it
    (``compile`` parses and executes nothing; this interpreter is the worker's)."""
    try:
        compile(source, "candidate.py", "exec", dont_inherit=True)
    except SyntaxError as e:  # IndentationError and TabError too
        return f"syntax error in candidate: {e}"
    except (ValueError, RecursionError, MemoryError):  # null bytes, absurd nesting: the worker says what
        pass
    return None


def _write_job(workdir: Path, prep: PreparedProblem, candidate: Candidate, opts: JudgeOptions) -> None:
    """The job the worker reads (and deletes before the candidate is imported): where the problem
    is, how to draw each case's inputs and build the reference state, and how to time. No input
    data and no expected value travels: the worker draws the inputs itself."""
    (workdir / "candidate.py").write_text(candidate.source)
    poison = max((nbytes(c.expected) for c in prep.cases), default=0) * 2 + (64 << 20) if opts.guards else 0
    job = {
        "device": build.worker_device(prep.device),
        "precision": opts.precision,
        "task": prep.problem.task,
        "problem_path": str(prep.problem.path),
        "problem_level": prep.problem.level,
        "candidate_path": str(workdir / "candidate.py"),
        "cases": prep.job_cases(),
        "poison_bytes": poison,
        "profile": opts.guards,
        "guards": opts.guards,
        "timing": {
            "enabled": opts.timing,
            "warmup_ms": opts.warmup_ms,
            "min_trials": opts.min_trials,
            "max_trials": opts.max_trials,
            "budget_s": opts.timing_budget_s,
            "target_rse": opts.target_rse,
            "trace": opts.timing_trace,
        },
    }
    (workdir / "job.json").write_text(json.dumps(job))


def _last(messages: list, event: str):
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("event") == event:
            return m
    return None


def _first(messages: list, event: str):
    for m in messages:
        if isinstance(m, dict) and m.get("event") == event:
            return m
    return None


# reports the worker sends once per run (per configuration where keyed): a second one was written on
# the channel by the candidate (it shares the process and can find the pipe), and no count of them
# can be trusted
ONCE = {"inputs": None, "timing": None, "profile": None, "done": None, "failure": None, "stopped": None,
        "timed_inputs": "config", "variant_timing": "config", "case_done": "case", "case_failed": "case"}


def _forged_reports(messages: list) -> str | None:
    """Why the worker's messages hold a report twice (written by the candidate), or None."""
    seen: dict = {}
    for m in messages:
        if not isinstance(m, dict) or m.get("event") not in ONCE:
            continue
        key = ONCE[m["event"]]
        which = json.dumps(m.get(key), sort_keys=True, default=str) if key else ""
        seen[(m["event"], which)] = seen.get((m["event"], which), 0) + 1
        if seen[(m["event"], which)] > 1:
            what = m["event"] + (f" ({key} {which})" if key else "")
            return f"the worker's channel carried a second {what} report: messages were written by the candidate"
    return None


def _death(res: sandbox.ProcessResult, stage_default: str, limit_s: float) -> tuple[str, str]:
    """(category, message) of a worker that ended without a verdict of its own: timeout or crash."""
    stage = _last(res.messages, "stage")
    where = f"during {stage_default}"
    if stage:
        where = f"during {stage.get('stage')}" + (f" (case {stage['case']})" if "case" in stage else "")
        where += f" of {stage.get('config')}" if stage.get("stage") == "variant_timing" else ""
    if res.timed_out and res.idle_s is not None:
        return "timeout", (f"candidate sat idle {where}: its processes used under {IDLE_CPU_S:g} s of CPU time in "
                           f"{res.idle_s:.1f} s (sleeping or blocked), past the idle limit")
    if res.timed_out:
        return "timeout", f"candidate exceeded the {limit_s:g} s limit {where}"
    how = f"killed by {res.signal_name}" if res.signal_name else f"exited with status {res.returncode}"
    return "crash", f"candidate process {how} {where} without reporting a result"


def _died(v: Verdict, res: sandbox.ProcessResult, stage_default: str, limit_s: float) -> Verdict:
    """A worker that ended without a verdict of its own: timeout or crash."""
    failure, message = _death(res, stage_default, limit_s)
    return _fail(v, failure, message, res.log)


def _ended_early(res: sandbox.ProcessResult) -> bool:
    """Whether the worker ended without its ``done`` report (killed, timed out, exited non-zero)."""
    return bool(res.timed_out or res.returncode != 0 or not _last(res.messages, "done"))


def _died_checking(res: sandbox.ProcessResult) -> bool:
    """Whether a worker that ended without finishing was checking a set when it died (that set's
    configuration fails; the checks before it stand)."""
    stage = _last(res.messages, "stage")
    return bool(stage) and stage.get("stage") == "correctness" and isinstance(stage.get("case"), int)


def judge(problem: Problem, candidate: Candidate, opts: JudgeOptions | None = None, workdir: str | Path | None = None,
          prepared: PreparedProblem | None = None) -> Verdict:
    """Judge ``candidate`` on ``problem``. Always returns a verdict unless the judge itself cannot
    run (then :class:`JudgeError`).

    ``prepared``: the problem's reference side (:func:`kbench_lib.prepared.prepare`), shared by
    every candidate of the problem in a batch; made here, with fresh seeds, when not given."""
    return start_judgement(problem, candidate, opts, workdir, prepared).finish()


def start_judgement(problem: Problem, candidate: Candidate, opts: JudgeOptions | None = None, workdir: str | Path | None = None,
                    prepared: PreparedProblem | None = None, gated: bool = False, built: "BuildResult | None" = None) -> "Judgement":
    """:func:`judge` up to its worker's start: the job written, the candidate built, the worker
    running (or the verdict already decided, by a failed build). :meth:`Judgement.finish` waits for
    the worker and checks what it left. ``gated``: the worker waits before its profile and timed
    calls until :meth:`Judgement.open_gate` (a batch overlaps it with the previous candidate's
    checks: :mod:`kbench_lib.overlap`). ``built``: this candidate's build, already tried for this
    judgement (a batch builds ahead): a failure there is its verdict, without a second try (a
    build at its time limit is not remembered in the cache, and would take its whole limit again).
    Raises :class:`JudgeError` as :func:`judge` does."""
    opts = opts or JudgeOptions()
    started = time.monotonic()
    try:
        device = resolve_device(opts.device)
    except RuntimeError as e:
        raise JudgeError(str(e)) from e
    small = (not device.startswith("cuda")) if opts.small is None else opts.small
    opts.small = small
    v = Verdict(
        problem=problem.key, level=problem.level, backend=candidate.backend, device=device,
        device_name=device_name(device), precision=opts.precision, small=small, kernel_sha=candidate.sha[:16],
        env=environment(device),
    )
    try:
        if prepared is None:
            t0 = time.monotonic()
            server_pool.prestart(device.startswith("cuda"))  # the worker's fork server starts while the reference is made
            prepared = prepare_problem(problem, opts, device)
            v.stage_s["reference_cases"] = round(time.monotonic() - t0, 3)
        elif (prepared.problem.sha, prepared.device, prepared.precision, prepared.small) != (problem.sha, device, opts.precision, small):
            raise JudgeError(f"the prepared reference is for {prepared.problem.key} on {prepared.device} ({prepared.precision}), "
                             f"not {problem.key} on {device} ({opts.precision})")
        elif not _plans_variant_timing(prepared, opts):
            raise JudgeError(f"the prepared reference of {problem.key} was planned with time_variants={not opts.time_variants}")
        v.seed = prepared.seed
        return Judgement(prepared, candidate, opts, v, workdir, started, gated, built)
    except BaseException:
        v.judge_s = time.monotonic() - started
        raise


def prepare_problem(problem: Problem, opts: JudgeOptions | None = None, device: str | None = None, cancel=None) -> PreparedProblem:
    """The reference side of ``problem`` for ``opts`` (fresh seeds unless ``opts.seed``); ``cancel``:
    see :func:`kbench_lib.prepared.prepare`."""
    opts = opts or JudgeOptions()
    device = device or resolve_device(opts.device)
    small = (not device.startswith("cuda")) if opts.small is None else opts.small
    try:
        return prepare(problem, device, opts, small, opts.seed, cancel=cancel)
    except ProblemError as e:
        raise JudgeError(str(e)) from e


def _plans_variant_timing(prep: PreparedProblem, opts: JudgeOptions) -> bool:
    """Whether a prepared problem's plan times the variants exactly when ``opts`` asks for it."""
    has_variants = len({s.config.name for s in prep.specs}) > 1
    return not (opts.timing and has_variants) or bool(prep.timed_variants) == bool(opts.time_variants)


_START_PARTS = ("context", "draw", "imports", "threads", "arena")


def _stage_times(v: Verdict, since: float, res: sandbox.ProcessResult, ended: float) -> None:
    """Seconds per worker stage, from the arrival times of its stage messages; the worker's own
    split of its start (``run_start.context`` and so on, parts of ``run_start``: what it reported
    before any candidate code ran, numbers only)."""
    stages = [m for m in res.messages if isinstance(m, dict) and m.get("event") == "stage" and "_t" in m]
    prev_name, prev_t = "start", since
    for m in stages:
        name, t = m.get("stage"), m["_t"]
        key = f"run_{prev_name}"
        v.stage_s[key] = round(v.stage_s.get(key, 0.0) + t - prev_t, 3)
        if prev_name == "start":
            _stage_parts(v, "run_start", m.get("parts"), _START_PARTS)
        prev_name, prev_t = name, t
    key = f"run_{prev_name}"
    v.stage_s[key] = round(v.stage_s.get(key, 0.0) + ended - prev_t, 3)


def _stage_parts(v: Verdict, stage: str, parts, names: tuple) -> None:
    """The worker's report of a stage's parts into ``stage_s`` as ``stage.part``: known names with
    finite seconds only (the report is the worker's, after the candidate's import possibly forged)."""
    if not isinstance(parts, dict):
        return
    for name in names:
        secs = _real(parts.get(name), 0.0, 1e6)
        if secs is not None:
            v.stage_s[f"{stage}.{name}"] = round(secs, 3)


class _Laps:
    def __init__(self, v: Verdict):
        self.v, self.mark = v, time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.v.stage_s[name] = round(self.v.stage_s.get(name, 0.0) + now - self.mark, 3)
        self.mark = now


VARIANT_TIMING_ALLOWANCE_S = 15.0  # per timed variant beyond its timing budget: its warm-up and sampled outputs


def run_limit_s(prep: PreparedProblem, opts: JudgeOptions) -> float:
    """The run's time limit: ``run_timeout_s``, plus, with ``time_variants``, each timed variant's
    timing budget for every run it may take (re-measurements included) and an allowance, so that an honest candidate on a problem with many variants is
    not cut off while its variants are timed."""
    if not opts.timing:
        return opts.run_timeout_s
    from ..measure.timing import MAX_REMEASURE  # a drifting run is measured again, each time within the budget

    per_variant = (1 + MAX_REMEASURE) * opts.timing_budget_s + VARIANT_TIMING_ALLOWANCE_S
    return opts.run_timeout_s + len(prep.timed_variants) * per_variant


class Judgement:
    """One candidate's judgement under way (:func:`start_judgement`): its worker runs, or its
    verdict was decided before one started. :meth:`finish` waits for the worker, checks what it
    left, and cleans up; it always ends with the verdict, or raises what :func:`judge` would."""

    def __init__(self, prep: PreparedProblem, candidate: Candidate, opts: JudgeOptions, v: Verdict, workdir, started: float,
                 gated: bool, built: "BuildResult | None" = None):
        self.prep, self.candidate, self.opts, self.v, self.started = prep, candidate, opts, v, started
        self._built = built if built is not None and built.failure else None
        self.lap = _Laps(v)
        self.run: sandbox.Running | None = None  # None after _start: the verdict needed no run (a failed build)
        self._own_dir = workdir is None
        self.wd = Path(tempfile.mkdtemp(prefix=f"kbench-job-{os.getpid()}-", dir=_job_parent())) if self._own_dir else Path(workdir)
        self._allocating = self._out = self._arena = None
        self._claim: BuildClaim | None = None
        self._finished: Verdict | None = None
        try:
            self._start(gated)
        except BaseException:
            self._cleanup()
            self.v.judge_s = time.monotonic() - started
            raise

    def _start(self, gated: bool) -> None:
        prep, candidate, opts, v, lap = self.prep, self.candidate, self.opts, self.v, self.lap
        if opts.guards:  # static: what the source says (flags only; what ran is checked at run time)
            v.flags.extend(guards.static_flags(candidate.source, candidate.backend, opts.policy))
            v.flags.extend(prep.flags)
        v.sol_ms = prep.sol_ms
        v.notes.extend(prep.notes)
        v.variants_declared, v.variants_derived = list(prep.variants_declared), list(prep.variants_derived)
        syntax = _syntax_error(candidate.source)
        if syntax:  # its import could only raise it: no build, no worker
            _fail(v, "load_error", syntax)
            return
        device = prep.device
        self.wd.mkdir(parents=True, exist_ok=True)
        _write_job(self.wd, prep, candidate, opts)
        self._out = _OutDir(self.wd)  # opened before any candidate code runs: a later swap of ``out`` is never followed
        lap("write_job")
        self._arena = _output_arena(prep, opts)
        if self._arena is not None:
            self._out.arena = self._arena
            lap("device_arena")
        else:
            self._allocating = _preallocate_outputs(self._out, prep, opts)
        # build: once per distinct source; compiler output goes into the verdict, not the terminal
        if build.needs_build(candidate):
            b = self._built or build_candidate(candidate, device, opts, self.wd)
            v.build_s, v.build_cached, v.build_log = b.seconds, b.cached, b.log[-20000:]
            v.network_isolated = b.network_isolated
            if b.failure:
                _fail(v, b.failure, b.message, b.log)
                return
        v.compiled = True
        lap("build")
        # run: correctness on every case, then timing, in one fresh isolated process; a compiled
        # candidate's import takes torch's build lock for a moment: held under a claim (build_claim.py)
        if build.needs_build(candidate):
            self._claim = BuildClaim(build.build_dir(candidate, device))
        # the arena's descriptor goes to this worker (named by ENV_FD), with its size
        arena = self._arena if self._arena is not None and self._arena.fd >= 0 else None
        self.run = sandbox.start_isolated(["-m", "kbench_lib.worker", "run", str(self.wd)], workdir=str(self.wd),
                                          timeout_s=run_limit_s(prep, opts),
                                          env_extra={**build.build_env(candidate, device),
                                                     **({device_arena.ENV_BYTES: str(arena.nbytes)} if arena else {})},
                                          isolate_network=opts.isolate_network and opts.guards, cuda=device.startswith("cuda"),
                                          writable=build.writable_dirs(candidate, device), gated=gated,
                                          idle_timeout_s=opts.idle_timeout_s or None,
                                          fds={device_arena.ENV_FD: arena.fd} if arena else None)
        if arena is not None:
            arena.close_fd()  # the worker has its own: no later worker can be given this one

    @property
    def isolated(self) -> bool:
        """Whether its worker runs in its own PID and mount namespaces (what overlapping two
        candidates' workers relies on: neither can see, signal or write to the other)."""
        return self.run is not None and self.run.pid_isolated

    def detach(self) -> bool:
        """After its worker ended, before another candidate's worker starts beside its checks:
        its result files opened and its job folder removed, so that nothing of it is left for the
        next one to find. False where that cannot be done (a caller's own folder): then nothing
        may run beside it."""
        if self.run is None or self.run.ended is None or not self._own_dir:
            return self.run is None
        self._release_claim()
        if self._allocating is not None:
            self._allocating.stop()
        if self._out is not None:
            self._out.detach()
        shutil.rmtree(self.wd, ignore_errors=True)
        return not self.wd.exists()

    def _release_claim(self) -> None:
        if self._claim is not None:
            self._claim.release()
            self._claim = None

    def open_gate(self) -> None:
        if self.run is not None:
            self.run.open_gate()

    def wait(self) -> None:
        """Until its worker has ended (opening the gate if it is still shut)."""
        if self.run is not None:
            self.run.wait()

    def finish(self) -> Verdict:
        if self._finished is not None:
            return self._finished
        try:
            if self.run is not None:
                self._check()
            self._finished = self.v
            return self.v
        finally:
            self._cleanup()
            self.v.judge_s = time.monotonic() - self.started

    def _check(self) -> None:
        prep, candidate, opts, v, lap, out = self.prep, self.candidate, self.opts, self.v, self.lap, self._out
        res = self.run.result()
        self._release_claim()  # its processes are gone: none of them holds torch's build lock now
        _stage_times(v, lap.mark, res, self.run.ended)
        lap.mark = time.monotonic()
        v.network_isolated = res.network_isolated
        if _run_failed(v, res, prep, opts):
            return
        _check_profile(v, res, prep, candidate, opts)
        lap("reference_profile")
        configs = _check_configs(v, res, prep, out, opts)
        lap("compare")
        default = configs[0]
        # timed whenever the default configuration may be correct under some protocol (its error within
        # the loosest tolerance): a run judged under one protocol can be read under another
        if opts.timing and _last(res.messages, "timing") and protocols.may_pass(default, prep.precision):
            if _check_timed_outputs(v, res, prep, out, opts, default):
                lap("recheck")
                _baselines(v, prep, opts)
                lap("baseline")
                if prep.timed_variants:
                    _time_variants(v, res, prep, out, opts, configs)
                    lap("variant_timing")
        _decide(v, configs, prep, opts, res.log)
        lap("decide")
        if opts.guards and protocols.may_pass(default, prep.precision):
            v.flags.extend(guards.runtime_flags(v, prep.problem, opts.policy))
        elif not opts.guards:
            v.flags.clear()  # the worker's own checks still ran, but nothing it noticed is a guard's verdict here

    def _cleanup(self) -> None:
        try:
            if self.run is not None and self.run.ended is None:  # finishing failed before the wait: never leave it running
                self.run.wait()
        finally:
            self._release_claim()
            if self._allocating is not None:
                self._allocating.stop()
            if self._arena is not None:  # its memory goes back once no tensor views it
                self._arena.close_fd()
                self._arena = None
            if self._out is not None:
                self._out.close(self._allocating.names if self._allocating is not None else [])
                self._out = None
            if self._own_dir and not self.opts.keep_workdir:
                shutil.rmtree(self.wd, ignore_errors=True)


PREALLOCATE_MIN = 16 << 20  # outputs smaller than this are cheap to write into fresh pages
HEADER_ROOM = 1 << 20  # a tensor file's header and alignment, beyond its tensors' bytes
PREALLOCATE_THREADS = 4


class _Preallocation:
    """Files allocated on a few threads (page zeroing is the kernel's work and scales with cores),
    largest first; ``stop`` skips what is left and waits. The work must be over before the worker
    times its calls: host work beside the timed calls delays their launches (it showed as a false
    ``memoisation_suspected`` on an honest kernel when one thread was still allocating)."""

    def __init__(self, out: "_OutDir", files: list[tuple[str, int]], threads: int):
        self._out, self.names = out, [name for name, _ in files]
        self._stopped = threading.Event()
        self._todo = sorted(files, key=lambda f: -f[1])
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, name="kbench-preallocate", daemon=True) for _ in range(threads)]
        try:
            for t in self._threads:
                t.start()
        except BaseException:  # no thread may outlive the folder handle it writes through
            self._threads = [t for t in self._threads if t.ident is not None]
            self.stop()
            raise

    def _run(self) -> None:
        while not self._stopped.is_set():
            with self._lock:
                if not self._todo:
                    return
                name, n = self._todo.pop(0)
            tensorfile.preallocate(name, n, dir_fd=self._out.fd)  # relative to the judge's own folder, never through a symlink

    def stop(self) -> None:
        self._stopped.set()
        for t in self._threads:
            t.join()


def _output_files(prep: PreparedProblem, opts: JudgeOptions) -> list[tuple[str, list[torch.Tensor]]]:
    """The worker's result files as an honest worker writes them, each with the reference's tensors
    of the same shapes: each case's outputs and gradients, and each timed run's samples."""
    files = [(f"case_{i}.kbt", tensors_in([c.expected, c.expected_input_grads, c.expected_param_grads]))
             for i, (c, t) in enumerate(zip(prep.cases, prep.timed)) if not t]
    if opts.timing:
        for k, (name, timed, _) in enumerate(prep.timing_groups):
            files.append((timing_file(timed, name if k else None), tensors_in([prep.cases[i].expected for i in timed])))
    return files


ARENA_MIN = 16 << 20  # below this, outputs are cheap to move through files


def _output_arena(prep: PreparedProblem, opts: JudgeOptions):
    """The device arena for the worker's outputs (:mod:`kbench_lib.device_arena`), or None: a CPU
    device, outputs too small to be worth it, ``opts.device_arena`` off, a kept job folder (its files
    must hold the outputs themselves: the arena is gone after the verdict), or an arena that cannot
    be made (then the files carry everything, preallocated as before)."""
    if not opts.device_arena or opts.keep_workdir or not prep.device.startswith("cuda"):
        return None
    files = _output_files(prep, opts)
    if sum(nbytes(ts) for _, ts in files) < ARENA_MIN:
        return None
    return device_arena.create(prep.device, _arena_size(files))


def _arena_bytes(prep: PreparedProblem, opts: JudgeOptions) -> int:
    """What an honest worker places in the arena (see _arena_size)."""
    return _arena_size(_output_files(prep, opts))


def _arena_size(files: list[tuple[str, list[torch.Tensor]]]) -> int:
    """Every output tensor of the result files ``files``, each starting at an aligned offset."""
    return sum(nbytes(t) + device_arena.ALIGN for _, ts in files for t in ts)


def _preallocate_outputs(out: "_OutDir", prep: PreparedProblem, opts: JudgeOptions) -> _Preallocation | None:
    """Allocates the pages of the worker's output files (each case's outputs and gradients, and the
    timed samples) on a thread of the judge while the worker starts, so that the worker's
    page-locked copies fill pages that exist (tensorfile's docstring). Only for a CUDA device."""
    if not prep.device.startswith("cuda"):
        return None
    sizes = [(p, nbytes(ts)) for p, ts in _output_files(prep, opts)]
    files = [(p, n + HEADER_ROOM) for p, n in sizes if n >= PREALLOCATE_MIN]
    if not files:
        return None
    return _Preallocation(out, files, threads=max(1, min(PREALLOCATE_THREADS, (os.cpu_count() or 2) // 2, len(files))))


def _run_failed(v: Verdict, res: sandbox.ProcessResult, prep: PreparedProblem, opts: JudgeOptions) -> bool:
    """Fills the verdict and returns True when the worker did not finish every case."""
    fail = _last(res.messages, "failure")
    done = _last(res.messages, "done")
    harness = _last(res.messages, "harness_error")
    if harness and not fail:
        imported = any(isinstance(m, dict) and m.get("event") == "stage" and m.get("stage") == "load" for m in res.messages)
        if not imported:  # no candidate code had run: the harness's own fault
            raise JudgeError(f"the judge's worker failed: {harness.get('message', '')[-2000:]}")
        # once the candidate is imported, a harness failure is its doing, or a report it wrote on the
        # channel to pass its own failure off as the judge's
        _fail(v, "crash", f"the worker failed after the candidate was imported: {str(harness.get('message', ''))[-2000:]}", res.log)
        return True
    # the first report of the inputs was sent before the candidate was imported: a later one is not the worker's
    drawn = _first(res.messages, "inputs")
    if drawn is not None:
        # drawn before the candidate was imported: the worker's inputs and reference state must be
        # the judge's, or nothing it returns could be compared
        cases = drawn.get("cases")
        for i, (case, got, timed) in enumerate(zip(prep.cases, cases if isinstance(cases, list) else [], prep.timed)):
            # a timed set is drawn later, just before its first timed call (its fingerprints: timed_inputs)
            sums = None if timed else [t["sums"] if is_fingerprint(t) else None for t in case.inputs]
            mine = _plain_json({"inputs": sums, "state": case.state_sums})
            if not isinstance(got, dict) or _plain_json({"inputs": got.get("inputs"), "state": got.get("state")}) != mine:
                raise JudgeError(f"the worker drew other inputs or reference state than the judge for case {i} ({case.config}): "
                                 f"{prep.problem.key}'s get_inputs/get_init_inputs are not reproducible on {prep.device}")
    forged = _forged_reports(res.messages)
    if forged:
        _fail(v, "crash", forged, res.log)
        return True
    if fail:
        failure = fail.get("failure") if fail.get("failure") in FAILURES else "crash"  # the message is the candidate's process's
        if failure == "compile_error":
            v.compiled = False
        v.flags.extend(_strings(fail.get("flags")))  # what the candidate left behind, when the worker could still tell
        _fail(v, failure, str(fail.get("message", ""))[-8000:], res.log)
        return True
    if _ended_early(res):
        if not (drawn is not None and _died_checking(res)):
            _died(v, res, "run", run_limit_s(prep, opts))
            return True
        # it died checking a set: that set's configuration fails (config_checks.gather); the rest stand
    if drawn is None:
        _fail(v, "crash", "the worker reported no fingerprints of the inputs it drew", res.log)
        return True
    if done:
        v.flags.extend(_strings(done.get("flags")))
    return False


def _strings(items) -> list[str]:
    """Flags from a worker's message: strings only (bounded), whatever the message held."""
    return [str(f)[:2000] for f in items[:100]] if isinstance(items, list) else []


def _plain_json(obj):
    return json.loads(json.dumps(obj, default=str))


INT32_MAX = (1 << 31) - 1  # counts go to int32 columns of the records (records.SCHEMA)


def _count(x) -> int | None:
    """A non-negative count from a candidate's message, clamped to int32; None if not an int."""
    if isinstance(x, bool) or not isinstance(x, int) or x < 0:
        return None
    return min(x, INT32_MAX)


def _real(x, lo: float = 0.0, hi: float = math.inf) -> float | None:
    """A finite number in [lo, hi] from a candidate's message; None otherwise."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) and lo <= x <= hi else None


def _clean_profile(cand: dict) -> tuple[dict, list[str]]:
    """The profile message's fields with the types the records need, and the names of the fields
    that were malformed (their bad entries dropped). The worker's profile is the candidate's
    process's: a value like ``{"count": 1 << 40}`` or ``{"name": 3}`` would otherwise break the
    record's columns when a batch writes it."""
    bad: list[str] = []
    out: dict = {}
    n = cand.get("n_kernels")
    out["n_kernels"] = None if n is None else _count(n)
    if n is not None and (out["n_kernels"] is None or out["n_kernels"] != n):
        bad.append("n_kernels")
    share = cand.get("custom_kernel_share")
    out["custom_kernel_share"] = None if share is None else _real(share, 0.0, 1.0)
    if share is not None and out["custom_kernel_share"] is None:
        bad.append("custom_kernel_share")
    top, raw = [], cand.get("top_kernels") or []
    if not isinstance(raw, list):
        bad.append("top_kernels")
        raw = []
    for item in raw[:5]:
        if isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str) and _real(item[1], 0.0, 1.0) is not None:
            top.append([item[0][:120], float(item[1])])
        elif "top_kernels" not in bad:
            bad.append("top_kernels")
    out["top_kernels"] = top
    ops, raw = {}, cand.get("ops") or {}
    if not isinstance(raw, dict):
        bad.append("ops")
        raw = {}
    if len(raw) > 1000:  # distinct ATen op names: no forward of this benchmark runs that many
        bad.append("ops")
    for name, c in list(raw.items())[:1000]:
        k = _count(c)
        if isinstance(name, str) and k is not None:
            ops[name[:240]] = k
        if (k is None or k != c or not isinstance(name, str) or len(name) > 240) and "ops" not in bad:
            bad.append("ops")
    out["ops"] = ops
    kernels, raw = [], cand.get("kernels") or []
    if not isinstance(raw, list):
        bad.append("kernels")
        raw = []
    for r in raw[:profiling.MAX_KERNEL_ROWS]:
        ok = isinstance(r, dict) and isinstance(r.get("name"), str) and (r.get("op") is None or isinstance(r.get("op"), str))
        count, us = (_count(r.get("count")), _real(r.get("device_us"))) if ok else (None, None)
        if ok and count is not None and us is not None:
            kernels.append({"name": r["name"][:profiling.MAX_KERNEL_NAME], "op": r["op"][:240] if r.get("op") else None,
                            "count": count, "device_us": us})
            ok = count == r.get("count")
        if not (ok and count is not None and us is not None) and "kernels" not in bad:
            bad.append("kernels")
    if len(raw) > profiling.MAX_KERNEL_ROWS and "kernels" not in bad:
        bad.append("kernels")
    out["kernels"] = kernels
    return out, bad


def _check_profile(v: Verdict, res, prep: PreparedProblem, candidate: Candidate, opts: JudgeOptions) -> None:
    """What the candidate's forward ran, against what the reference's runs (THREATS #1-#3)."""
    prof = _last(res.messages, "profile")
    if opts.guards and not prof and any(prep.timed) and not any(f.startswith("profile_failed") for f in v.flags):
        v.flags.append("profile_missing: the run reported no profile of the candidate's forward")
    if not prof:
        return
    raw = prof.get("profile")
    if not isinstance(raw, dict):
        v.flags.append("profile_malformed: the run's profile message carried no profile")
        return
    cand, bad = _clean_profile(raw)
    if bad:
        v.flags.append(f"profile_malformed: malformed fields in the run's profile ({', '.join(bad)}); bad entries dropped")
    v.n_kernels, v.custom_kernel_share = cand["n_kernels"], cand["custom_kernel_share"]
    v.top_kernels = cand["top_kernels"]
    ref = prep.reference_profile()
    v.profile_ops, v.profile_kernels = cand["ops"], cand["kernels"]
    v.reference_ops, v.reference_kernels, v.reference_n_kernels = dict(ref["ops"]), list(ref.get("kernels") or []), ref.get("n_kernels")
    if not opts.policy.on("library_passthrough"):
        return
    same = profiling.passthrough(ref["ops"], cand["ops"])
    share = v.custom_kernel_share
    if candidate.backend in ("cuda", "triton", "cpp") and share is not None and share < opts.policy.min_custom_share and not same:
        v.flags.append(f"library_does_the_work: the candidate's own kernels took {share:.2%} of its device time")
    if same:
        v.flags.append(f"library_passthrough: the candidate's forward ran all of the reference's compute ops itself ({', '.join(same)})")


class _OutDir:
    """The job's ``out`` folder, created and opened by the judge before any candidate code runs.

    The build and run workers import the candidate while the job folder is writable: it can
    replace ``out`` with a symlink (to /dev/shm, $HOME, ...). The judge therefore never resolves
    ``out`` by name after this: it creates (preallocates) and reads result files relative to the
    folder it opened (``dir_fd``, ``O_NOFOLLOW``), and a read finds the job's ``out`` no longer
    that folder a :class:`tensorfile.TensorFileError` (a crash)."""

    def __init__(self, wd: Path):
        self.path = wd / "out"
        try:
            if not stat.S_ISDIR(os.lstat(self.path).st_mode):
                os.unlink(self.path)  # a caller's workdir that an earlier candidate left a symlink in
        except FileNotFoundError:
            pass
        try:
            self.path.mkdir()
        except FileExistsError:
            pass  # a real folder: a caller's workdir used before
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        st = os.fstat(self.fd)
        self._ident = (st.st_dev, st.st_ino)
        self._files: dict[str, int] | None = None  # after detach(): the result files, open
        self._replaced = False
        self.arena = None  # the judgement's device arena, where the worker's files may place tensors

    def detach(self) -> None:
        """Opens every result file (``*.kbt``) now and reads only those from here on, so that the
        job folder can be removed before the next candidate's worker starts (it must find nothing
        of this one's: in a batch both are judged on the same input sets). A folder already
        replaced stays so: every read fails as :meth:`read` would."""
        if self.fd < 0 or self._files is not None:
            return
        self._files = {}
        if not self.intact():
            self._replaced = True
            return
        try:
            names = sorted(n for n in os.listdir(self.fd) if n.endswith(".kbt"))[:MAX_RESULT_FILES]
        except OSError:
            names = []
        for name in names:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd)
            except OSError:
                continue  # a symlink or something unreadable: read() finds it missing
            if stat.S_ISREG(os.fstat(fd).st_mode):
                self._files[name] = fd
            else:
                os.close(fd)

    def intact(self) -> bool:
        """Whether ``out`` is still the folder the judge opened (not a symlink, not another folder)."""
        if self._files is not None:
            return not self._replaced
        try:
            st = os.lstat(self.path)
        except OSError:
            return False
        return stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == self._ident

    def read(self, name: str, device: str | None = None, max_bytes: int | None = None):
        """A worker's tensor file; with a CUDA ``device``, its tensors copied straight there.
        ``max_bytes``: what an honest file of this name could hold (a larger one is refused
        before anything is copied to the judge's GPU)."""
        if self.fd < 0:
            raise tensorfile.TensorFileError("the job's out folder is closed")
        if not self.intact():
            raise tensorfile.TensorFileError("the job's out folder was replaced during the run (a symlink or another folder)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # read-only mapping: the views are never written
            if self._files is not None:
                if name not in self._files:
                    raise tensorfile.TensorFileError(f"cannot open {name}: No such file or directory")
                return tensorfile.read(name, device=device, max_bytes=max_bytes, fd=self._files[name], arena=self.arena)
            return tensorfile.read(name, device=device, dir_fd=self.fd, max_bytes=max_bytes, arena=self.arena)

    def close(self, names=()) -> None:
        """Closes the folder; where it no longer sits at ``out`` (moved away by the candidate, so
        removing the job folder would miss it), first removes the files the judge made there."""
        if self.fd < 0:
            return
        for fd in (self._files or {}).values():
            os.close(fd)
        self._files = {} if self._files is not None else None
        try:
            if names and self._files is None and not self.intact():
                for name in names:
                    try:
                        os.unlink(name, dir_fd=self.fd)
                    except OSError:
                        pass
        finally:
            os.close(self.fd)
            self.fd = -1
            self.arena = None


MAX_RESULT_FILES = 1024  # more result files than any plan writes: the rest are never opened
RESULT_SLACK = 64 << 20  # bytes beyond twice the expected tensors: fingerprints, a wrong shape or two


def _result_cap(*expected) -> int:
    """The most tensor bytes a result file may hold: twice what the reference produced, and some.
    More is no honest answer (a wrong shape that large fails on its shape anyway); refused as a
    forged file, it never reaches the judge's GPU."""
    return 2 * nbytes(list(expected)) + RESULT_SLACK


def _check_configs(v: Verdict, res, prep: PreparedProblem, out: _OutDir, opts: JudgeOptions) -> list[dict]:
    """Correctness of every configuration (:mod:`kbench_lib.config_checks`), here, on plain
    tensors (the arithmetic on the judge's GPU when it has one); the counts the verdict keeps."""
    cmp_dev = prep.device if prep.device.startswith("cuda") else None
    tol = protocols.tolerance(opts.protocol, prep.precision)

    def read(i: int):
        case = prep.cases[i]
        try:
            got = out.read(f"case_{i}.kbt", cmp_dev, _result_cap(case.expected, case.expected_input_grads, case.expected_param_grads))
        except (tensorfile.TensorFileError, OSError) as e:  # a missing or forged file is a crash, never a pass
            raise config_checks.ResultError(str(e)) from e
        if not isinstance(got, dict):
            raise config_checks.ResultError("the result is not a record")
        return got

    died = _death(res, "run", run_limit_s(prep, opts)) if _ended_early(res) else None
    configs = config_checks.gather(prep, res.messages, read, tol, cmp_dev, died)
    v.seeds_checked = configs[0]["sets"]
    v.variants_checked = sum(1 for c in configs[1:] if c["checked"])
    return configs


def _decide(v: Verdict, configs: list[dict], prep: PreparedProblem, opts: JudgeOptions, log: str | None = None) -> None:
    """The verdict's ``correct``, ``failure``, ``cause`` and message under its protocol; for fp32,
    the reference's own TF32 error on every configuration that fails by its error alone."""
    if prep.precision == "fp32":
        for c in configs:
            if c["checked"] and not c["hard_failure"] and not protocols.config_passes(c, protocols.KBENCH_TOLERANCE["fp32"]):
                c["ref_tf32_tol"] = prep.reference_tf32_tol(c["config"])
    tol = protocols.tolerance(opts.protocol, prep.precision)
    config_checks.settle(configs, tol)
    v.protocol, v.configs = opts.protocol, configs
    scoped = [c for c in configs if protocols.in_scope(opts.protocol, c)]
    errs = [c["max_abs_err"] for c in scoped if c["max_abs_err"] is not None]
    v.max_abs_err = max(errs) if errs else None
    d = protocols.decide(configs, prep.precision, opts.protocol)
    v.cause = d["cause"]
    if d["correct"]:
        v.correct, v.failure = True, None
        return
    _fail(v, d["failure"], d["message"], log)  # the worker's own output beside the verdict, as for every failure


def _check_timed_outputs(v: Verdict, res, prep: PreparedProblem, out: _OutDir, opts: JudgeOptions, default: dict) -> bool:
    """The default configuration's timed outputs re-checked (folded into ``default``'s result: a
    wrong timed output fails it as a wrong checked one does), and its time. False when there is
    no trustworthy time (a malformed report, a hard failure of the re-check)."""
    stats = _timing_stats(_last(res.messages, "timing").get("timing"))
    if isinstance(stats, str):
        config_checks.fail_config(default, "crash", f"[{default['config']}] the worker's timing report is malformed: {stats}")
        return False
    r = _recheck_samples(v, res, prep, out, "timing.kbt", prep.timing_groups[0][1], opts, "", default["config"])
    config_checks.add_set(default, r, count=False)
    if not protocols.may_pass(default, prep.precision):
        return False  # wrong timed outputs under every protocol: no time to keep
    v.runtime_ms, v.runtime_stats = stats["median_ms"], stats
    _stage_parts(v, "run_timing", stats.get("phase_s"), _TIMING_PARTS)
    return True


_TIMING_PARTS = ("inputs", "setup", "warmup", "trials", "device_clock", "write")  # timing.Timing.phase_s, the worker's
_STAT_NUMBERS = ("mean_ms", "std_ms", "p10_ms", "p90_ms", "min_ms", "rse", "first_round_ms", "device_ms", "device_union_ms", "stream_ms", "head_start_us",
                 "first_round_issue_us", "first_run_ms", "others_cpu_s")
_STAT_COUNTS = ("n_trials", "unjoined_trials", "device_calls", "remeasured", "warmup_calls", "late_issues", "first_round_late", "others")


def _timing_stats(stats) -> dict | str:
    """A timing message's stats when well-formed (a positive finite ``median_ms``; the other
    fields the records keep numbers or absent), else what is wrong with them."""
    if not isinstance(stats, dict):
        return "no timing statistics"
    med = stats.get("median_ms")
    if _real(med) is None or med <= 0:
        return f"median_ms {str(med)[:40]!r} is not a positive finite number"
    for k in _STAT_NUMBERS:
        if stats.get(k) is not None and _real(stats[k]) is None:
            return f"{k} {str(stats[k])[:40]!r} is not a finite non-negative number"
    for k in _STAT_COUNTS:
        if stats.get(k) is not None and (_count(stats[k]) is None or _count(stats[k]) != stats[k]):
            return f"{k} {str(stats[k])[:40]!r} is not a count"
    return stats


def _timed_cases(res, prep: PreparedProblem, timed: list[int], config: str | None = None) -> tuple[dict | None, str | None]:
    """The judge's own cases for one timed run's sets, as the worker drew them: each set's seed
    came from the OS at its first timed call (no seed of a timed set exists earlier, so none can be
    answered ahead) and is reported in ``timed_inputs`` with the inputs' fingerprints. The judge
    draws the same sets and runs its reference on them; fingerprints that differ mean the drawing
    was steered. Returns (index -> Case, None) or (None, why)."""
    keys = {str(i) for i in timed}
    reports = [m for m in res.messages if isinstance(m, dict) and m.get("event") == "timed_inputs" and m.get("config") == config]
    if len(reports) != 1 or not isinstance(reports[0].get("cases"), dict) or set(reports[0]["cases"]) != keys:
        return None, "the worker reported no seeds and fingerprints of the timed input sets it drew (or more than one report)"
    got = reports[0]["cases"]
    cases = {}
    for i in timed:
        entry = got[str(i)]
        seed = entry.get("seed") if isinstance(entry, dict) else None
        if type(seed) is not int or not 0 <= seed < 1 << 63:
            return None, f"the report of timed input set {i} holds no seed"
        try:
            case = prep.timed_case(i, seed)
        except Exception as e:  # noqa: BLE001 - the reference ran on every other set of this configuration
            raise JudgeError(f"the reference failed on timed input set {i} (seed {seed}): {type(e).__name__}: {e}") from e
        mine = _plain_json([t["sums"] if is_fingerprint(t) else None for t in case.inputs])
        if _plain_json(entry.get("inputs")) != mine:
            return None, f"timed input set {i} ({prep.cases[i].config}) is not the judge's: its drawing was steered"
        cases[i] = case
    cases["written"] = reports[0].get("written")
    return cases, None


def _rewritten(tdata: dict, written, device: str | None) -> str | None:
    """Why the timing record read back is not the one the worker reported writing (fingerprints of
    its samples and its inputs-after, sent right after the write), or None. Candidate code can run
    after the write (a finalizer, a patched property); a record it rewrote then no longer matches."""
    if not isinstance(written, dict):
        return "came with no report of what was written"
    samples = tdata.get("samples") or {}
    try:
        mine = {k: [fingerprint(o)["sums"] if isinstance(o, torch.Tensor) else None for o in outs] for k, outs in samples.items()}
    except Exception as e:  # noqa: BLE001 - a sample that is not a list of tensors
        return f"holds samples that cannot be read back ({type(e).__name__})"
    if _plain_json(mine) != _plain_json(written.get("samples") or {}) or \
            _plain_json(tdata.get("inputs_after")) != _plain_json(written.get("inputs_after")):
        return "was rewritten after the worker wrote it (its samples or inputs differ from the worker's report of them)"
    return None


def _recheck_samples(v: Verdict, res, prep: PreparedProblem, out: _OutDir, name: str, timed: list[int], opts: JudgeOptions,
                     where: str, config: str, timed_config: str | None = None) -> config_checks.SetResult:
    """Re-checks the sampled timed outputs of one timed run (phase detection, memoisation:
    THREATS #8, #9) and the inputs as the timed calls left them; the result as one more set of
    ``config``'s. ``timed``: the indices of that run's timed input sets; the worker samples every
    one of them (each set's first call always) and reports every set's inputs, so the keys of both
    must be exactly these (a sample of no set, or of another group's, is a forged record).
    ``where``: " on <variant>"; ``timed_config``: that variant's name (None: the default's)."""
    cmp_dev = prep.device if prep.device.startswith("cuda") else None
    tag = f"[{config}]"

    def hard(failure: str, message: str) -> config_checks.SetResult:
        return config_checks.SetResult(failure, f"{tag} {message}")

    try:
        tdata = out.read(name, cmp_dev, _result_cap([prep.cases[i].expected for i in timed]))
    except (tensorfile.TensorFileError, OSError) as e:
        return hard("crash", f"no readable timing record{where}: {e}")
    if not isinstance(tdata, dict):
        return hard("crash", f"the timing record{where} is not a record")
    samples, afters = tdata.get("samples"), tdata.get("inputs_after")
    keys = {str(i) for i in timed}
    for what, got in (("sampled outputs", samples), ("inputs after the timed calls", afters)):
        if what == "sampled outputs" and not got:
            continue  # nothing sampled (guards off): flagged below when guards are on
        if not isinstance(got, dict) or set(got) != keys:
            shown = sorted(map(str, got))[:8] if isinstance(got, dict) else type(got).__name__
            return hard("crash", f"the timing record{where} has {what} for sets {shown}, not the timed sets {sorted(keys)[:8]}")
    drawn, steered = _timed_cases(res, prep, timed, timed_config)
    if steered:
        return hard("input_mutated", f"during timing{where}: {steered}")
    rewritten = _rewritten(tdata, drawn.pop("written"), cmp_dev)
    if rewritten:
        return hard("crash", f"the timing record{where} {rewritten}")
    tol = protocols.tolerance(opts.protocol, prep.precision)
    need, worst, over = 0.0, 0.0, None
    for idx, outs in (samples or {}).items():
        m = measure_outputs(drawn[int(idx)].expected, outs, what="timed output", device=cmp_dev)
        if m.hard is not None:
            return hard(m.hard.failure, f"output during timing{where} differs from the reference: {m.hard.message}")
        need, worst = max(need, m.tol_needed), max(worst, m.max_abs_err)
        found = m.mismatch(tol)
        if found is not None and over is None:
            over = f"{tag} output during timing{where} differs from the reference: {found.message}"
    for idx, after in afters.items():
        changed = unchanged(drawn[int(idx)].inputs, after, cmp_dev)
        if changed:
            return hard("input_mutated", f"during timing{where}: {changed}")
    if opts.guards and not samples:
        v.flags.append(f"timing_unchecked: no timed output{where} could be sampled for re-checking")
    return config_checks.SetResult(None, None, need, worst, over)


def _time_variants(v: Verdict, res, prep: PreparedProblem, out: _OutDir, opts: JudgeOptions, configs: list[dict]) -> None:
    """``time_variants``: each variant's timed outputs re-checked as the default's are (folded into
    that variant's result: a wrong output there fails it), its time, the eager baseline's on the
    same sets, the speedup. A variant that failed its checks was not timed."""
    by_name = {c["config"]: c for c in configs}
    reported = {m.get("config"): m.get("timing") for m in res.messages
                if isinstance(m, dict) and m.get("event") == "variant_timing" and isinstance(m.get("config"), str)}
    for name, timed, _ in prep.timed_variants:
        c = by_name[name]
        if c["hard_failure"] or not c["checked"]:
            continue
        stats = reported.get(name)
        if not isinstance(stats, dict):
            config_checks.fail_config(c, "crash", f"[{name}] the worker reported no timing of variant {name}")
            continue
        stats = _timing_stats(stats)
        if isinstance(stats, str):
            config_checks.fail_config(c, "crash", f"[{name}] the worker's timing report of variant {name} is malformed: {stats}")
            continue
        r = _recheck_samples(v, res, prep, out, timing_file(timed, name), timed, opts, f" on {name}", name, timed_config=name)
        config_checks.add_set(c, r, count=False)
        if not protocols.may_pass(c, prep.precision):
            continue  # wrong timed outputs under every protocol: no speedup on this variant
        base = prep.variant_baseline(name, opts).median_ms
        v.variant_timings[name] = {"runtime_ms": stats["median_ms"], "baseline_ms": base, "speedup": base / stats["median_ms"],
                                   "sol_ms": prep.variant_sol_ms(name)}


def _baselines(v: Verdict, prep: PreparedProblem, opts: JudgeOptions) -> None:
    """Eager (measured once per prepared problem) and torch.compile baselines, and the speedups."""
    base = prep.baseline(opts)
    v.baseline_ms, v.baseline_stats = base.median_ms, base.as_dict()
    v.speedup = v.baseline_ms / v.runtime_ms if v.runtime_ms else None
    v.baseline_compile_ms = prep.compile_baseline_ms(opts)
    if v.baseline_compile_ms and v.runtime_ms:
        v.speedup_compile = v.baseline_compile_ms / v.runtime_ms


@dataclass
class BuildResult:
    failure: str | None = None
    message: str = ""
    log: str = ""
    seconds: float = 0.0
    cached: bool = False
    network_isolated: bool = False


def build_candidate(candidate: Candidate, device: str, opts: JudgeOptions, workdir: str | Path | None = None) -> BuildResult:
    """The build stage alone: import the candidate in an isolated process so that its extensions
    compile into the cache. A source built before is not built again."""
    if build.is_built(candidate, device):
        return BuildResult(cached=True)
    known = build.build_failure(candidate, device)
    if known:
        return BuildResult(failure=known["failure"], message=known.get("message", ""), log=known.get("log", ""), cached=True)
    own = workdir is None
    wd = Path(tempfile.mkdtemp(prefix=f"kbench-build-{os.getpid()}-", dir=_job_parent())) if own else Path(workdir)
    try:
        (wd / "candidate.py").write_text(candidate.source)
        if not (wd / "job.json").exists():
            job = {"device": build.worker_device(device), "precision": opts.precision, "task": "forward", "candidate_path": str(wd / "candidate.py"), "cases": []}
            (wd / "job.json").write_text(json.dumps(job))
        t0 = time.monotonic()
        with BuildClaim(build.build_dir(candidate, device)) as claim:  # a lock file a killed build left is cleared first
            # the idle limit too, where no other judge's build can hold torch's lock in the folder:
            # a build that uses no CPU then waits on nothing (a candidate that sleeps at import)
            res = sandbox.run_isolated(
                ["-m", "kbench_lib.worker", "build", str(wd)], workdir=str(wd), timeout_s=opts.build_timeout_s,
                env_extra=build.build_env(candidate, device), isolate_network=opts.isolate_network and opts.guards,
                cuda=device.startswith("cuda"), writable=build.writable_dirs(candidate, device),
                idle_timeout_s=(opts.idle_timeout_s or None) if claim.alone else None,
            )
        out = BuildResult(seconds=time.monotonic() - t0, log=res.log, network_isolated=res.network_isolated)
        fail = _last(res.messages, "failure")
        if res.timed_out and res.idle_s:
            out.failure, out.message = "compile_error", (f"build sat idle: its processes used under {IDLE_CPU_S:g} s of CPU time "
                                                         f"in {res.idle_s:.1f} s")
        elif res.timed_out:
            out.failure, out.message = "compile_error", f"build exceeded the {opts.build_timeout_s:g} s limit"
        elif fail:
            out.failure, out.message = fail["failure"], fail.get("message", "")
            build.mark_failed(candidate, device, out.failure, out.message, out.log)
        elif not _last(res.messages, "built"):
            how = f"killed by {res.signal_name}" if res.signal_name else f"exited with status {res.returncode}"
            out.failure, out.message = "crash", f"candidate process {how} during build without reporting a result"
        else:
            build.mark_built(candidate, device, out.seconds, res.log)
        return out
    finally:
        if own:
            shutil.rmtree(wd, ignore_errors=True)


def _job_parent() -> str | None:
    """Job files (inputs, raw outputs) go to RAM-backed /dev/shm where it exists. Job folders left
    there by a judge that was killed (their name carries its pid) are removed first: each can hold
    gigabytes of memory."""
    shm = "/dev/shm"
    if not (os.path.isdir(shm) and os.access(shm, os.W_OK)):
        return None
    _remove_orphans(shm)
    return shm


def _remove_orphans(parent: str) -> None:
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        m = _JOB_DIR.match(name)
        if not m or int(m.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
        except OSError:
            pass  # alive, another user's


_JOB_DIR = re.compile(r"^kbench-(?:job|build)-(\d+)-")