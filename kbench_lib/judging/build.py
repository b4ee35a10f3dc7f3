"""The build cache: where a candidate's compiled code lives, keyed by a hash of its content.

A candidate compiles when its module is imported (``load_inline`` at module level, as KernelBench
candidates do) or, for Triton, at its first launch. Each distinct candidate source gets its own
``TORCH_EXTENSIONS_DIR`` under the cache root, keyed by the source, the backend, the torch version
and the target architecture; a ``built.json`` marker written after a successful build lets the judge
skip the build stage for a source it has built before. Triton's own cache is content-hashed and
shared. CUDA code is compiled for the local GPU's architecture only (``TORCH_CUDA_ARCH_LIST``).

The DSL backends (``cute``, ``tilelang``: :mod:`kbench_lib.core.dsl_packages`) compile from Python
when the candidate runs: their build is the import and one ``ModelNew`` made in the sandbox (so a
kernel that does not compile there is a ``compile_error``), their own on-disk kernel caches point
into the candidate's entry (a kernel compiled in the build is loaded, not compiled again, by the
run), and the entry's key holds the DSL's version (another version compiles again).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

import torch

from ..core import dsl_packages
from ..core.candidates import Candidate
from ..core.paths import cache_root


def local_arch(device: str) -> str | None:
    """``major.minor`` of the GPU the judge runs on, or None on the CPU."""
    if not device.startswith("cuda") or not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability(torch.device(device))
    return f"{major}.{minor}"


def build_key(candidate: Candidate, device: str) -> str:
    arch = local_arch(device) or "cpu"
    parts = [candidate.sha, torch.__version__, arch, sys.version.split()[0]]
    if dsl_packages.is_dsl(candidate.backend):
        parts.append(f"{candidate.backend} {dsl_packages.version(candidate.backend)}")
    material = "\0".join(parts)
    return hashlib.sha256(material.encode()).hexdigest()[:24]


def build_dir(candidate: Candidate, device: str) -> Path:
    return cache_root() / "ext" / build_key(candidate, device)


def default_jobs(devices: list[str] | str) -> int:
    """How many candidates a batch builds at once when the user does not say: on a GPU, every core
    but two (the judge's and its worker's), at most 16; on the CPU one at a time, since builds beside
    CPU-timed candidates would slow the very cores that time them."""
    devices = [devices] if isinstance(devices, str) else devices
    if not any(str(d).startswith("cuda") for d in devices):
        return 0
    return max(0, min(16, (os.cpu_count() or 1) - 2))


def build_env(candidate: Candidate, device: str, jobs: int | None = None) -> dict[str, str]:
    """Environment variables that point a candidate's compilation at its cache entry."""
    threads = str(jobs or max(1, min(8, os.cpu_count() or 1)))
    env = {
        "TORCH_EXTENSIONS_DIR": str(build_dir(candidate, device)),
        "TRITON_CACHE_DIR": str(cache_root() / "triton"),
        "MAX_JOBS": threads,
        # torch.compile in a candidate: max-autotune precompiles its choices on this many threads,
        # which end with the compile; the worker keeps Inductor's own compiles in its process
        # (worker.start.compile_in_process), so no pool of compile processes outlives the calls
        "TORCHINDUCTOR_COMPILE_THREADS": threads,
    }
    pkg = dsl_packages.PACKAGES.get(candidate.backend)
    if pkg is not None:  # the DSL's own kernel cache, in the candidate's entry
        env[pkg.cache_env] = str(build_dir(candidate, device) / pkg.cache_folder)
    arch = local_arch(device)
    if arch:
        env["TORCH_CUDA_ARCH_LIST"] = arch
    if device.startswith("cuda:"):  # the candidate sees its own GPU only, as its "cuda" device
        env["CUDA_VISIBLE_DEVICES"] = physical_gpu(int(device.split(":", 1)[1]))
    if not device.startswith("cuda"):
        env["TRITON_INTERPRET"] = "1"  # Triton kernels run through its interpreter on the CPU
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def physical_gpu(index: int) -> str:
    """The CUDA_VISIBLE_DEVICES entry of this process's GPU ``index``."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        entries = [e.strip() for e in visible.split(",") if e.strip()]
        if index < len(entries):
            return entries[index]
    return str(index)


def worker_device(device: str) -> str:
    """The judge's device as the candidate's process names it (it sees only that GPU)."""
    return "cuda" if device.startswith("cuda") else device


def writable_dirs(candidate: Candidate, device: str) -> tuple[str, ...]:
    """Where a candidate's process may write besides its job directory: its build cache entry and
    Triton's cache."""
    return (str(build_dir(candidate, device)), str(cache_root() / "triton"))


def needs_build(candidate: Candidate) -> bool:
    return candidate.backend in ("cuda", "cpp") or dsl_packages.is_dsl(candidate.backend)


def is_built(candidate: Candidate, device: str) -> bool:
    return (build_dir(candidate, device) / "built.json").exists()


def mark_built(candidate: Candidate, device: str, seconds: float, log: str) -> None:
    d = build_dir(candidate, device)
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f"built.json.{os.getpid()}"
    tmp.write_text(json.dumps({"seconds": seconds, "time": time.time(), "log": log[-20000:]}))
    tmp.replace(d / "built.json")


def built_info(candidate: Candidate, device: str) -> dict:
    try:
        return json.loads((build_dir(candidate, device) / "built.json").read_text())
    except (OSError, ValueError):
        return {}


def mark_failed(candidate: Candidate, device: str, failure: str, message: str, log: str) -> None:
    """Remembers that a source's build failed as the compiler said (a compile error is as
    deterministic as a success): a batch's background build and the judge's build stage, or a
    resumed run, do not compile it again. Timeouts and crashes are not remembered."""
    d = build_dir(candidate, device)
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f"failed.json.{os.getpid()}"
    tmp.write_text(json.dumps({"failure": failure, "message": message[-8000:], "log": log[-20000:], "time": time.time()}))
    tmp.replace(d / "failed.json")


def build_failure(candidate: Candidate, device: str) -> dict | None:
    """The remembered failure of this source's build, or None."""
    try:
        return json.loads((build_dir(candidate, device) / "failed.json").read_text())
    except (OSError, ValueError):
        return None
