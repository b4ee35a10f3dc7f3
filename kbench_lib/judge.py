"""Judging one candidate against one problem: static -> build -> load -> correctness -> timing -> guards.

The judge's process owns the reference: it builds the problem's Model, draws fresh seeds, computes
the expected outputs (and gradients, for backward tasks), and times the eager baseline. The
candidate runs in a separate, isolated worker process (:mod:`kbench_lib.worker`, started through
:mod:`kbench_lib.sandbox`) that never sees an expected value; its raw outputs come back as plain
tensors and are compared here, element by element.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from . import baselines_store, build, guards, profiling, roofline, sandbox
from .candidates import Candidate
from .compare import compare_outputs, unchanged
from .lint import degenerate_reasons
from .problems import Problem, ProblemError
from .provenance import device_name, environment, resolve_device
from .reference import Case, build_reference, make_case, set_flags
from .tensors import TOLERANCE, nbytes, require_grad, to_device
from .timing import time_callable

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
    timing: bool = True
    warmup_ms: float = 25.0
    min_trials: int = 100
    max_trials: int = 2000
    timing_budget_s: float = 10.0
    target_rse: float = 0.005
    compile_baseline: bool = False  # measure torch.compile when no stored baseline exists
    baselines_root: str | None = None
    isolate_network: bool = True
    policy: guards.Policy = field(default_factory=guards.Policy)
    keep_workdir: bool = False
    # False: correctness and timing only, as a plain harness would judge (no static analysis, no
    # profile, no poisoning, no re-checks of timed outputs, no namespaces, no flags). For measuring
    # what the guards cost (benchmarks/guard_cost.py); never for results that are reported.
    guards: bool = True


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
    sol_ms: float | None = None
    stage_s: dict = field(default_factory=dict)  # seconds the judge spent in each stage (its own speed)
    notes: list = field(default_factory=list)  # information that does not affect trust
    env: dict = field(default_factory=dict)

    @property
    def trusted(self) -> bool:
        return self.correct and not self.flags

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=str)


def _fail(v: Verdict, failure: str, message: str, log: str | None = None) -> Verdict:
    from .tracebacks import candidate_frames_first  # the candidate's own frames first (harness frames trimmed)
    v.failure, v.correct = failure, False
    v.message = candidate_frames_first(message or "")[-4000:]
    if log:
        v.error = log[-8000:]
    return v


def _seeds(problem: Problem, base: int, opts: JudgeOptions, small: bool):
    """(config, init_seed, input_seed, timed) for every case: the default configuration with
    n_seeds distinct input sets over one model, every variant, and (when timing) timing_sets more
    input sets of the default configuration that only the timed calls see."""
    configs = problem.configs(small=small)
    out = []
    for k in range(opts.n_seeds):
        out.append((configs[0], base, base + 1 + 7919 * k, False))
    for v, cfg in enumerate(configs[1:], start=1):
        for k in range(opts.variant_seeds):
            out.append((cfg, base + 104729 * v, base + 104729 * v + 1 + 7919 * k, False))
    if opts.timing:
        for k in range(opts.timing_sets):
            out.append((configs[0], base, base + 1 + 7919 * (opts.n_seeds + k), True))
    return out


def _write_job(workdir: Path, problem: Problem, candidate: Candidate, cases: list[Case], timed: list[bool], device: str, opts: JudgeOptions) -> None:
    (workdir / "candidate.py").write_text(candidate.source)
    metas = []
    for i, (case, is_timed) in enumerate(zip(cases, timed)):
        name = f"case_{i}.pt"
        payload = {
            "config": case.config,
            "init_seed": case.init_seed,
            "input_seed": case.input_seed,
            "init_inputs": case.init_inputs,
            "state_dict": case.state_dict,
            "inputs": case.inputs,
            "grad_output": case.grad_output,
        }
        torch.save(payload, workdir / name)
        metas.append({"file": name, "config": case.config, "init_seed": case.init_seed, "timed": is_timed})
    poison = max((nbytes(c.expected) for c in cases), default=0) * 2 + (64 << 20) if opts.guards else 0
    job = {
        "device": device,
        "precision": opts.precision,
        "task": problem.task,
        "candidate_path": str(workdir / "candidate.py"),
        "cases": metas,
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
        },
    }
    (workdir / "job.json").write_text(json.dumps(job))


def _last(messages: list, event: str):
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("event") == event:
            return m
    return None


def _died(v: Verdict, res: sandbox.ProcessResult, stage_default: str, limit_s: float) -> Verdict:
    """A worker that ended without a verdict of its own: timeout or crash."""
    stage = _last(res.messages, "stage")
    where = f"during {stage.get('stage')}" + (f" (case {stage['case']})" if stage and "case" in stage else "") if stage else f"during {stage_default}"
    if res.timed_out:
        return _fail(v, "timeout", f"candidate exceeded the {limit_s:g} s limit {where}", res.log)
    how = f"killed by {res.signal_name}" if res.signal_name else f"exited with status {res.returncode}"
    return _fail(v, "crash", f"candidate process {how} {where} without reporting a result", res.log)


def _load_out(path: Path):
    return torch.load(path, weights_only=True, map_location="cpu")


def _check_case(case: Case, got: dict, tol: float, backward: bool, dev: str | None = None) -> tuple[str | None, str | None, float]:
    """(failure, message, max_abs_err) for one case's returned record."""
    mismatch, err = compare_outputs(case.expected, got.get("outputs"), tol, device=dev)
    if mismatch:
        return mismatch.failure, f"[{case.config}, seed {case.input_seed}] {mismatch.message}", err
    changed = unchanged(case.inputs, got.get("inputs_after", []), dev)
    if changed:
        return "input_mutated", f"[{case.config}] {changed}", err
    if backward:
        exp_in = [g for g in case.expected_input_grads]
        got_in = got.get("input_grads") or []
        for j, e in enumerate(exp_in):
            if e is None:
                continue
            g = got_in[j] if j < len(got_in) else None
            if g is None:
                return "output_mismatch", f"[{case.config}] no gradient for input {j}", err
            m, e2 = compare_outputs([e], [g], tol, what=f"grad of input {j}", device=dev)
            err = max(err, e2)
            if m:
                return m.failure, f"[{case.config}] {m.message}", err
        got_p = got.get("param_grads") or {}
        if case.expected_param_grads and set(got_p) != set(case.expected_param_grads):
            return "output_mismatch", f"[{case.config}] parameter gradients are not comparable: ModelNew's parameter names differ from the reference's", err
        for name, e in case.expected_param_grads.items():
            m, e2 = compare_outputs([e], [got_p[name]], tol, what=f"grad of {name}", device=dev)
            err = max(err, e2)
            if m:
                return m.failure, f"[{case.config}] {m.message}", err
    return None, None, err


def _reference_model(problem: Problem, cases: list[Case], timed: list[bool], device: str, opts: JudgeOptions):
    first = next(c for c, t in zip(cases, timed) if t)
    cfg = next(c for c in problem.configs(small=opts.small) if c.name == first.config)
    model, _, _ = build_reference(problem, cfg, first.init_seed, first.input_seed, device, opts.precision)
    return model, first


def _reference_ops(model, first: Case, device: str) -> dict:
    """The compute ops of the reference's forward on the first timed input set."""
    with torch.no_grad():
        return profiling.profile_call(model, to_device(first.inputs, device), device)["ops"]


def _time_reference(model, problem: Problem, cases: list[Case], timed: list[bool], device: str, opts: JudgeOptions, compile_model: bool = False):
    """Times the problem's own Model over the same rotation of input sets as the candidate."""
    sets = [to_device(c.inputs, device) for c, t in zip(cases, timed) if t]
    warm = [to_device(c.inputs, device) for c, t in zip(cases, timed) if not t and c.config == cases[0].config]
    backward = problem.task == "backward"
    if compile_model:
        model = torch.compile(model)
    if backward:
        grads = [[g.to(device) for g in c.grad_output] for c, t in zip(cases, timed) if t]
        for s in sets:
            require_grad(s)
        sets = [[*s, g] for s, g in zip(sets, grads)]
        wgrads = [[g.to(device) for g in c.grad_output] for c, t in zip(cases, timed) if not t and c.config == cases[0].config]
        for s in warm:
            require_grad(s)
        warm = [[*s, g] for s, g in zip(warm, wgrads)]

        def call(*args):
            model.zero_grad(set_to_none=True)
            out = model(*args[:-1])
            torch.autograd.backward(list(out) if isinstance(out, (list, tuple)) else [out], args[-1])
            return out
    else:
        def call(*inputs):
            with torch.no_grad():
                return model(*inputs)
    set_flags()
    threads = torch.get_num_threads()
    if device == "cpu":
        torch.set_num_threads(1)  # as the candidate is timed on the CPU
    try:
        return time_callable(
            call, sets, device, warmup_ms=opts.warmup_ms, min_trials=opts.min_trials, max_trials=opts.max_trials,
            budget_s=opts.timing_budget_s, target_rse=opts.target_rse, warmup_sets=warm or None,
        )
    finally:
        torch.set_num_threads(threads)


def judge(problem: Problem, candidate: Candidate, opts: JudgeOptions | None = None, workdir: str | Path | None = None) -> Verdict:
    """Judge ``candidate`` on ``problem``. Always returns a verdict unless the judge itself cannot
    run (then :class:`JudgeError`)."""
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
    base = opts.seed if opts.seed is not None else secrets.randbits(30)
    v.seed = base
    try:
        return _judge(problem, candidate, opts, device, v, base, workdir, started)
    finally:
        v.judge_s = time.monotonic() - started


def _stage_times(v: Verdict, since: float, res: sandbox.ProcessResult, ended: float) -> None:
    """Seconds per worker stage, from the arrival times of its stage messages."""
    marks = [(m.get("stage"), m["_t"]) for m in res.messages if isinstance(m, dict) and m.get("event") == "stage" and "_t" in m]
    prev_name, prev_t = "start", since
    for name, t in marks:
        key = f"run_{prev_name}"
        v.stage_s[key] = round(v.stage_s.get(key, 0.0) + t - prev_t, 3)
        prev_name, prev_t = name, t
    key = f"run_{prev_name}"
    v.stage_s[key] = round(v.stage_s.get(key, 0.0) + ended - prev_t, 3)


def _judge(problem, candidate, opts, device, v, base, workdir, started) -> Verdict:
    mark = [time.monotonic()]

    def lap(name: str) -> None:
        now = time.monotonic()
        v.stage_s[name] = round(v.stage_s.get(name, 0.0) + now - mark[0], 3)
        mark[0] = now

    # static: what the source says (flags only; what ran is checked at run time)
    if opts.guards:
        v.flags.extend(guards.static_flags(candidate.source, candidate.backend, opts.policy))

    # the reference, in this process only
    plan = _seeds(problem, base, opts, v.small)
    try:
        cases = [make_case(problem, cfg, i_seed, x_seed, device, opts.precision) for cfg, i_seed, x_seed, _ in plan]
    except ProblemError as e:
        raise JudgeError(str(e)) from e
    except Exception as e:  # noqa: BLE001 - the reference failing is the problem's fault, not the candidate's
        raise JudgeError(f"reference model of {problem.key} failed: {type(e).__name__}: {e}") from e
    timed = [t for *_, t in plan]
    tol = TOLERANCE[opts.precision]
    lap("reference_cases")
    built: list = []

    def reference():
        """(model, first timed case): the reference model, built once for profiling and timing."""
        if not built:
            built.extend(_reference_model(problem, cases, timed, device, opts))
        return built[0], built[1]
    # a task that a constant or an input-free answer passes cannot tell kernels apart (THREATS #6)
    other = next((c for c in cases[1:] if c.config == cases[0].config), None)
    for reason in degenerate_reasons(cases[0].expected, other.expected if other else None, tol) if opts.guards else ():
        v.flags.append(f"degenerate_task: {reason}")
    if device.startswith("cuda"):
        try:
            v.sol_ms = roofline.problem_sol_ms(problem, v.device_name, opts.precision, v.small)
        except Exception as e:  # noqa: BLE001 - a problem the FLOP counter cannot trace has no bound
            v.notes.append(f"no roofline bound: {type(e).__name__}: {str(e)[:200]}")

    own_dir = workdir is None
    wd = Path(tempfile.mkdtemp(prefix=f"kbench-job-{os.getpid()}-", dir=_job_parent())) if own_dir else Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    try:
        _write_job(wd, problem, candidate, cases, timed, device, opts)
        lap("write_job")
        env = build.build_env(candidate, device)
        py = ["-m", "kbench_lib.worker"]

        # build: once per distinct source; compiler output goes into the verdict, not the terminal
        if build.needs_build(candidate):
            b = build_candidate(candidate, device, opts, wd)
            v.build_s, v.build_cached, v.build_log = b.seconds, b.cached, b.log[-20000:]
            v.network_isolated = b.network_isolated
            if b.failure:
                return _fail(v, b.failure, b.message, b.log)
        v.compiled = True
        lap("build")

        # run: correctness on every case, then timing, in one fresh isolated process
        res = sandbox.run_isolated([*py, "run", str(wd)], workdir=str(wd), timeout_s=opts.run_timeout_s, env_extra=env,
                                   isolate_network=opts.isolate_network and opts.guards, cuda=device.startswith("cuda"), writable=build.writable_dirs(candidate, device))
        _stage_times(v, mark[0], res, time.monotonic())
        mark[0] = time.monotonic()
        v.network_isolated = res.network_isolated
        fail = _last(res.messages, "failure")
        done = _last(res.messages, "done")
        harness = _last(res.messages, "harness_error")
        if harness and not fail:
            raise JudgeError(f"the judge's worker failed: {harness.get('message', '')[-2000:]}")
        if fail:
            if fail["failure"] == "compile_error":
                v.compiled = False
            v.flags.extend(fail.get("flags", []))  # what the candidate left behind, when the worker could still tell
            return _fail(v, fail["failure"], fail.get("message", ""), res.log)
        if res.timed_out or not done or res.returncode != 0:
            return _died(v, res, "run", opts.run_timeout_s)
        finished = {m.get("case") for m in res.messages if isinstance(m, dict) and m.get("event") == "case_done"}
        missing = [i for i, t in enumerate(timed) if not t and i not in finished]
        if missing:
            return _fail(v, "crash", f"the worker reported done without finishing cases {missing[:5]}", res.log)
        v.flags.extend(done.get("flags", []))
        prof = _last(res.messages, "profile")
        if opts.guards and not prof and any(timed) and not any(f.startswith("profile_failed") for f in v.flags):
            v.flags.append("profile_missing: the run reported no profile of the candidate's forward")
        if prof and opts.policy.on("library_passthrough"):
            cand_prof = prof["profile"]
            v.n_kernels, v.custom_kernel_share = cand_prof.get("n_kernels"), cand_prof.get("custom_kernel_share")
            ref_ops = _reference_ops(*reference(), device)
            same = profiling.passthrough(ref_ops, cand_prof.get("ops", {}))
            share = v.custom_kernel_share
            if candidate.backend in ("cuda", "triton", "cpp") and share is not None and share < opts.policy.min_custom_share and not same:
                v.flags.append(f"library_does_the_work: the candidate's own kernels took {share:.2%} of its device time")
            if same:
                v.flags.append(f"library_passthrough: the candidate's forward ran all of the reference's compute ops itself ({', '.join(same)})")
            lap("reference_profile")

        # correctness, here, on plain tensors (the arithmetic on the judge's GPU when it has one)
        cmp_dev = device if device.startswith("cuda") else None
        worst = 0.0
        for i, case in enumerate(cases):
            if timed[i]:
                continue
            path = wd / "out" / f"case_{i}.pt"
            try:
                got = _load_out(path)
            except Exception as e:  # noqa: BLE001 - a missing or forged file is a crash, never a pass
                return _fail(v, "crash", f"no readable result for case {i}: {type(e).__name__}: {e}", res.log)
            failure, message, err = _check_case(case, got, tol, problem.task == "backward", cmp_dev)
            worst = max(worst, err or 0.0)
            if failure:
                v.max_abs_err = err
                return _fail(v, failure, message, res.log)
        v.max_abs_err = worst
        lap("compare")
        checked = [c for c, t in zip(cases, timed) if not t]
        v.seeds_checked = sum(1 for c in checked if c.config == checked[0].config)
        v.variants_checked = len({c.config for c in checked}) - 1
        v.correct = True

        # timing: re-check sampled timed outputs (phase detection, memoisation: THREATS #8, #9)
        timing_msg = _last(res.messages, "timing")
        if opts.timing and timing_msg:
            try:
                tdata = _load_out(wd / "out" / "timing.pt")
            except Exception as e:  # noqa: BLE001
                return _fail(v, "crash", f"no readable timing record: {e}", res.log)
            for idx, outs in (tdata.get("samples") or {}).items():
                m, _ = compare_outputs(cases[int(idx)].expected, outs, tol, what="timed output", device=cmp_dev)
                if m:
                    return _fail(v, "output_mismatch", f"output during timing differs from the reference: {m.message}", res.log)
            for idx, after in (tdata.get("inputs_after") or {}).items():
                changed = unchanged(cases[int(idx)].inputs, after, cmp_dev)
                if changed:
                    return _fail(v, "input_mutated", f"during timing: {changed}", res.log)
            if opts.guards and not tdata.get("samples"):
                v.flags.append("timing_unchecked: no timed output could be sampled for re-checking")
            stats = timing_msg["timing"]
            v.runtime_ms = stats["median_ms"]
            v.runtime_stats = stats
            lap("recheck")
            base_t = _time_reference(reference()[0], problem, cases, timed, device, opts)
            v.baseline_ms = base_t.median_ms
            v.baseline_stats = base_t.as_dict()
            v.speedup = v.baseline_ms / v.runtime_ms if v.runtime_ms else None
            v.baseline_compile_ms = baselines_store.lookup_compile_ms(problem, device, opts)
            if v.baseline_compile_ms is None and opts.compile_baseline:
                try:
                    v.baseline_compile_ms = _time_reference(reference()[0], problem, cases, timed, device, opts, compile_model=True).median_ms
                except Exception as e:  # noqa: BLE001 - compile may fail on some problems
                    v.notes.append(f"torch.compile baseline failed: {type(e).__name__}: {str(e)[:200]}")
            if v.baseline_compile_ms and v.runtime_ms:
                v.speedup_compile = v.baseline_compile_ms / v.runtime_ms
            lap("baseline")
        if opts.guards:
            v.flags.extend(guards.runtime_flags(v, problem, opts.policy))
        else:
            v.flags.clear()  # the worker's own checks still ran, but nothing it noticed is a guard's verdict here
        return v
    finally:
        if own_dir and not opts.keep_workdir:
            shutil.rmtree(wd, ignore_errors=True)


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
    own = workdir is None
    wd = Path(tempfile.mkdtemp(prefix=f"kbench-build-{os.getpid()}-", dir=_job_parent())) if own else Path(workdir)
    try:
        (wd / "candidate.py").write_text(candidate.source)
        if not (wd / "job.json").exists():
            job = {"device": device, "precision": opts.precision, "task": "forward", "candidate_path": str(wd / "candidate.py"), "cases": []}
            (wd / "job.json").write_text(json.dumps(job))
        t0 = time.monotonic()
        res = sandbox.run_isolated(
            ["-m", "kbench_lib.worker", "build", str(wd)], workdir=str(wd), timeout_s=opts.build_timeout_s,
            env_extra=build.build_env(candidate, device), isolate_network=opts.isolate_network and opts.guards, cuda=device.startswith("cuda"),
            writable=build.writable_dirs(candidate, device),
        )
        out = BuildResult(seconds=time.monotonic() - t0, log=res.log, network_isolated=res.network_isolated)
        fail = _last(res.messages, "failure")
        if res.timed_out:
            out.failure, out.message = "compile_error", f"build exceeded the {opts.build_timeout_s:g} s limit"
        elif fail:
            out.failure, out.message = fail["failure"], fail.get("message", "")
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