"""A candidate's build in an isolated process of its own (:func:`build_candidate`), and the job
folders of judges that died (:func:`_job_parent`).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..isolation import sandbox
from . import build
from ..core import dsl_packages
from ..core.build_claim import BuildClaim
from ..core.candidates import Candidate
from ..isolation.idle import IDLE_CPU_S
from .verdict import JudgeOptions
from .worker_reports import _last


@dataclass
class BuildResult:
    failure: str | None = None
    message: str = ""
    log: str = ""
    seconds: float = 0.0
    cached: bool = False
    network_isolated: bool = False


def _settled(candidate: Candidate, device: str) -> BuildResult | None:
    """What an earlier build of this source left: built, or its failure; None where neither."""
    if build.is_built(candidate, device):
        return BuildResult(cached=True)
    known = build.build_failure(candidate, device)
    if known:
        return BuildResult(failure=known["failure"], message=known.get("message", ""), log=known.get("log", ""), cached=True)
    return None


def build_candidate(candidate: Candidate, device: str, opts: JudgeOptions, workdir: str | Path | None = None,
                    problem_path: str | Path | None = None) -> BuildResult:
    """The build stage alone: import the candidate in an isolated process so that its extensions
    compile into the cache; with ``problem_path`` (or the job already in ``workdir``), one model is
    made too, so that extensions its ``__init__`` compiles are cached as well, and for a source that
    compiles at its first call, after the build has reported ``built``, one best-effort call under
    fake tensors (:mod:`kbench_lib.isolation.worker.lazy_compile`): a build that reported ``built``
    is built whatever its process did after. A source built before is not built again. A DSL backend
    whose package is missing here (or a device it cannot compile for) fails at once, in one line, and
    is not remembered as the source's failure: installing the extra mends it."""
    why = dsl_packages.unavailable(candidate.backend, device)
    if why:
        return BuildResult(failure="compile_error", message=why)
    settled = _settled(candidate, device)
    if settled is not None:
        return settled
    own = workdir is None
    wd = Path(tempfile.mkdtemp(prefix=f"kbench-build-{os.getpid()}-", dir=_job_parent())) if own else Path(workdir)
    try:
        (wd / "candidate.py").write_text(candidate.source)
        if not (wd / "job.json").exists():
            job = {"device": build.worker_device(device), "precision": opts.precision, "task": "forward", "candidate_path": str(wd / "candidate.py"), "cases": [],
                   "problem_path": str(problem_path) if problem_path else None, "backend": candidate.backend}
            (wd / "job.json").write_text(json.dumps(job))
        t0 = time.monotonic()
        with BuildClaim(build.build_dir(candidate, device)) as claim:  # a lock file a killed build left is cleared first
            # another judge builds this source now: its result, or the folder alone once that build ends
            if not claim.wait_alone(lambda: _settled(candidate, device) is not None, opts.build_timeout_s):
                settled = _settled(candidate, device)
                if settled is not None:
                    settled.seconds = time.monotonic() - t0  # the wait for the other's build
                    return settled
            # the idle limit too, where no other judge's build can hold torch's lock in the folder:
            # a build that uses no CPU then waits on nothing (a candidate that sleeps at import)
            res = sandbox.run_isolated(
                ["-m", "kbench_lib.isolation.worker", "build", str(wd)], workdir=str(wd), timeout_s=opts.build_timeout_s,
                env_extra=build.build_env(candidate, device), isolate_network=opts.isolate_network and opts.guards,
                cuda=device.startswith("cuda"), writable=build.writable_dirs(candidate, device),
                idle_timeout_s=(opts.idle_timeout_s or None) if claim.alone else None,
            )
        out = BuildResult(seconds=time.monotonic() - t0, log=res.log, network_isolated=res.network_isolated)
        fail = _last(res.messages, "failure")
        if not fail and _last(res.messages, "built"):
            # done once reported, whatever the process did after: the worker's best-effort warm-up
            # call under fake tensors (a crash, the time limit)
            build.mark_built(candidate, device, out.seconds, res.log)
        elif res.timed_out and res.idle_s:
            out.failure, out.message = "compile_error", (f"build sat idle: its processes used under {IDLE_CPU_S:g} s of CPU time "
                                                         f"in {res.idle_s:.1f} s")
        elif res.timed_out:
            out.failure, out.message = "compile_error", f"build exceeded the {opts.build_timeout_s:g} s limit"
        elif fail:
            out.failure, out.message = fail["failure"], fail.get("message", "")
            build.mark_failed(candidate, device, out.failure, out.message, out.log)
        else:
            how = f"killed by {res.signal_name}" if res.signal_name else f"exited with status {res.returncode}"
            out.failure, out.message = "crash", f"candidate process {how} during build without reporting a result"
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
