"""Judging one candidate against one problem: static -> build -> load -> correctness -> timing -> guards.

The judge's process owns the reference: it builds the problem's Model, draws fresh seeds, computes
the expected outputs (and gradients, for backward tasks), and times the eager baseline. The
candidate runs in a separate, isolated worker process (:mod:`kbench_lib.isolation.worker`, started through
:mod:`kbench_lib.isolation.sandbox`) that never sees an expected value; its raw outputs come back as plain
tensors and are compared here, element by element.

This module is the pipeline (:func:`judge`, :class:`Judgement`); its stages are modules of their own,
in the order a judgement meets them: :mod:`.verdict` (options, verdict, failures), :mod:`.build_job`
(the isolated build), :mod:`.outputs` (tensor transfer), :mod:`.worker_reports` (what the worker
reported and how it ended), :mod:`.correctness` (the run, each configuration, the decision),
:mod:`.timed` (the timed run and timed variants), :mod:`.profile_check`, :mod:`.stage_times`.
What a caller needs (:func:`judge`, :func:`start_judgement`, :func:`prepare_problem`,
:class:`JudgeOptions`, :class:`Verdict`, :class:`JudgeError`, :func:`build_candidate`) is importable
from here; every other name of a stage, from its own module.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from ..scoring import protocols
from ..scoring.flags import FLAGS
from ..scoring.metrics import times_a_kernel
from ..isolation import sandbox, server_pool
from . import build, guards, reference_store
from ..measure import device_arena, host_speed
from ..core import dsl_packages
from ..core.build_claim import BuildClaim
from ..core.candidates import Candidate
from .prepared import PreparedProblem, prepare
from ..suite.problems import Problem, ProblemError
from ..core.provenance import device_name, environment, resolve_device
from ..measure.tensors import nbytes
from ..measure.timing_summary import host_bound_note
from .verdict import JudgeError, JudgeOptions, Verdict, _fail
from .worker_reports import _last, run_limit_s
from .stage_times import _Laps, _queued, _stage_times
from .outputs import _OutDir, _output_arena, _preallocate_outputs
from .profile_check import _check_profile, _check_profile_due
from .correctness import _check_configs, _decide, _run_failed, _timed_result
from .timed import _check_timed_outputs, _time_variants
from .build_job import BuildResult, _job_parent, build_candidate


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
    if prep.device.startswith("cuda") and opts.timing:
        host_speed.sample()  # one probe of the host (about 1-3 ms): what the judge knows of its full speed grows with the batch
    job = {
        "device": build.worker_device(prep.device),
        "precision": opts.precision,
        "task": prep.problem.task,
        "problem_path": str(prep.problem.path),
        "problem_level": prep.problem.level,
        "candidate_path": str(workdir / "candidate.py"),
        "backend": candidate.backend,  # a DSL's package is imported before the candidate (worker.start._import_backend)
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
            # the host's full speed as the judge knows it: the worker times a host-bound candidate on a
            # CPU running at it, as the judge times the baseline (measure.timing.time_cuda)
            "full_speed_ms": host_speed.learn_full_speed() if prep.device.startswith("cuda") and opts.timing else None,
        },
    }
    (workdir / "job.json").write_text(json.dumps(job))


def judge(problem: Problem, candidate: Candidate, opts: JudgeOptions | None = None, workdir: str | Path | None = None,
          prepared: PreparedProblem | None = None) -> Verdict:
    """Judge ``candidate`` on ``problem``. Always returns a verdict unless the judge itself cannot
    run (then :class:`JudgeError`).

    ``prepared``: the problem's reference side (:func:`kbench_lib.judging.prepared.prepare`), shared by
    every candidate of the problem in a batch; made here, with fresh seeds, when not given."""
    return start_judgement(problem, candidate, opts, workdir, prepared).finish()


def start_judgement(problem: Problem, candidate: Candidate, opts: JudgeOptions | None = None, workdir: str | Path | None = None,
                    prepared: PreparedProblem | None = None, gated: bool = False, built: "BuildResult | None" = None,
                    cancel=None, on_prepared=None) -> "Judgement":
    """:func:`judge` up to its worker's start: the job written, the candidate built, the worker
    running (or the verdict already decided, by a failed build). :meth:`Judgement.finish` waits for
    the worker and checks what it left. ``gated``: the worker waits before its profile and timed
    calls until :meth:`Judgement.open_gate` (a batch overlaps it with the previous candidate's
    checks: :mod:`kbench_lib.batch.overlap`). ``built``: this candidate's build, already tried for this
    judgement (a batch builds ahead): a failure there is its verdict, without a second try (a
    build at its time limit is not remembered in the cache, and would take its whole limit again).
    ``cancel`` and ``on_prepared()`` (called once the reference side is made here, before the
    build), for a caller that shows the stage and may give up (the lab). Raises :class:`JudgeError`
    as :func:`judge` does (and :class:`~kbench_lib.judging.prepared.PreparationCancelled`)."""
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
            prepared = prepare_problem(problem, opts, device, cancel=cancel)
            v.stage_s["reference_cases"] = round(time.monotonic() - t0, 3)
            if on_prepared is not None:
                on_prepared()
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
    see :func:`kbench_lib.judging.prepared.prepare`."""
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
        unbuildable = dsl_packages.unavailable(candidate.backend, device)
        if unbuildable:  # a DSL not installed here (the extra named), or no GPU to compile for: one line, no worker
            _fail(v, "compile_error", unbuildable)
            return
        if dsl_packages.described(candidate.backend):
            v.notes.append(f"the {candidate.backend} backend's package here: {dsl_packages.described(candidate.backend)}")
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
                lap("build")  # a build made here that failed is the judgement's time too
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
        self.run = sandbox.start_isolated(["-m", "kbench_lib.isolation.worker", "run", str(self.wd)], workdir=str(self.wd),
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
            self.v.judge_s = time.monotonic() - self.started - (self.v.queue_s or 0.0)

    def _check(self) -> None:
        prep, candidate, opts, v, lap, out = self.prep, self.candidate, self.opts, self.v, self.lap, self._out
        res = self.run.result()
        self._release_claim()  # its processes are gone: none of them holds torch's build lock now
        _stage_times(v, lap.mark, res, self.run.ended)
        v.queue_s = _queued(res, self.run.gate_opened)
        lap.mark = time.monotonic()
        v.network_isolated = res.network_isolated
        if _run_failed(v, res, prep, opts):
            return
        _check_profile(v, res, prep, candidate, opts)
        lap("reference_profile")
        configs = _check_configs(v, res, prep, out, opts)
        lap("compare")
        default = _timed_result(configs, prep)
        _check_profile_due(v, res, prep, opts, default)
        # timed whenever the timed configuration (the default, or its eval configuration under a protocol
        # that times in eval mode) may be correct under some protocol (its error within the loosest
        # tolerance): a run judged under one protocol can be read under another
        if opts.timing and _last(res.messages, "timing") and protocols.may_pass(default, prep.precision):
            if _check_timed_outputs(v, res, prep, out, opts, default):
                lap("recheck")
                _baselines(v, prep, opts)
                lap("baseline")
                if prep.timed_variants:
                    _time_variants(v, res, prep, out, opts, configs)
                    reference_store.mark_stored(v.stage_s, prep, [f"variant:{n}" for n in v.variant_timings], "variant_baseline")
                    lap("variant_timing")
        _decide(v, configs, prep, opts, res.log)
        lap("decide")
        if opts.guards and protocols.may_pass(default, prep.precision):
            v.flags.extend(guards.runtime_flags(v, prep.problem, opts.policy))
        elif not opts.guards:  # the worker's own checks still ran, but nothing it noticed is a guard's verdict here
            v.flags[:] = [f"guards_off: {FLAGS['guards_off'].meaning}"]

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


def _baselines(v: Verdict, prep: PreparedProblem, opts: JudgeOptions) -> None:
    """Eager (measured once per prepared problem) and torch.compile baselines, and the speedups."""
    base = prep.baseline(opts)
    reference_store.mark_stored(v.stage_s, prep, ["baseline"], "baseline")
    v.baseline_ms, v.baseline_stats = base.median_ms, base.as_dict()
    kernel = times_a_kernel(v.device, v.small)  # elsewhere the times are runtimes, never a speedup
    v.speedup = v.baseline_ms / v.runtime_ms if v.runtime_ms and kernel else None
    note = host_bound_note(v.runtime_stats, v.baseline_stats)
    if note:
        v.notes.append(note)
    v.baseline_compile_ms = prep.compile_baseline_ms(opts)
    if v.baseline_compile_ms and v.runtime_ms and kernel:
        v.speedup_compile = v.baseline_compile_ms / v.runtime_ms
