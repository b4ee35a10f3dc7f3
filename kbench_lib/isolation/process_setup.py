"""What the sandbox, the fork server and the worker share about a process: the scrubbed
environment untrusted code sees, the parent-death signal, the resource limits set before exec, the
namespace flags, and the modules a fork server imports before any fork. Split from
:mod:`kbench_lib.isolation.sandbox` and :mod:`kbench_lib.isolation.forkserver` so that each of them (and the worker)
imports these from below instead of from each other.
"""
from __future__ import annotations

import os
import resource
import signal

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000

SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "SESSION")
ALLOWED_PREFIXES = ("CUDA_", "NVIDIA_", "LC_", "NCCL_", "TORCH_CUDA_ARCH", "OMP_", "MKL_", "TRITON_")
ALLOWED_NAMES = {
    "PATH", "LANG", "LANGUAGE", "TERM", "TZ", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CC", "CXX",
    "PYTHONPATH", "VIRTUAL_ENV", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
}


def scrubbed_env(extra: dict[str, str] | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment for untrusted code: only allow-listed names, never one that looks secret."""
    base = os.environ if base is None else base
    env = {}
    for name, value in base.items():
        upper = name.upper()
        if any(m in upper for m in SECRET_MARKERS):
            continue
        if name in ALLOWED_NAMES or upper.startswith(ALLOWED_PREFIXES):
            env[name] = value
    for name, value in (extra or {}).items():
        env[name] = value
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    return env


PR_SET_PDEATHSIG = 1


def _resolve_prctl():
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


# resolved here, in the parent: die_with_parent also runs between fork and exec (preexec_fn) in a
# judge with many threads, where a dlopen could wait forever on a loader lock held by another thread
_PRCTL = _resolve_prctl()


def die_with_parent(expected_parent: int | None = None) -> None:
    """This process gets SIGKILL when the thread that started it ends: a judge killed outright
    (SIGKILL, the OOM killer) takes its fork server, workers and builds with it, instead of leaving a
    hanging candidate running with nobody to stop it. ``expected_parent``: exit at once if the
    parent died before this call (the signal would never come)."""
    if _PRCTL is None:
        return
    _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if expected_parent is not None and os.getppid() != expected_parent:
        os._exit(137)


def _limit_resources(max_file_bytes: int) -> None:  # runs in the child before exec
    die_with_parent()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), min(4096, hard)))
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)


# imported by the server before any fork (none of them initialises CUDA or starts a thread): the
# profiler's first use alone imports torch._dynamo and its dependencies (1.3 s on a 2-core machine)
WARM_IMPORTS = ("torch._dynamo", "torch._inductor.config", "torch.distributed", "torch.onnx", "torch.testing",
                "torch.utils.cpp_extension", "sympy", "triton", "triton.language", "triton.compiler")
