"""Which judge service a command may use, and where it listens.

A service runs the code it imported when it started. A command may hand itself only to a service
started from the same code (every module of this package, by path, size and modification time),
the same interpreter and torch, and the same values of the environment variables that the judge
reads once at import or when its fork servers start (:data:`ENV_PREFIXES`, :data:`ENV_NAMES`). An
edit to the library, another virtual environment or another ``KBENCH_CACHE`` means another key,
so another service; a service whose key no command asks for ends when it has been idle long
enough. Nothing here imports torch: a command computes its key before it decides where to run.
"""
from __future__ import annotations

import hashlib
import os
import sys
from importlib import metadata
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
ENV_PREFIXES = ("KBENCH_", "CUDA_", "PYTORCH_", "TORCH_", "TRITON_", "NVIDIA_")
ENV_NAMES = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "HOME", "CC", "CXX")
CLIENT_ONLY = ("KBENCH_SERVE", "KBENCH_SERVE_DIR")  # how a command finds a service, not what the service runs with
DIR_ENV = "KBENCH_SERVE_DIR"


def code_fingerprint(package: Path = PACKAGE) -> str:
    """Every ``.py`` file of ``package`` by relative path, size and modification time, hashed."""
    h = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.relative_to(package)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _torch_version() -> str:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "none"


def service_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The variables of ``env`` (default ``os.environ``) a service's key holds."""
    env = os.environ if env is None else env
    return {k: v for k, v in env.items()
            if (k in ENV_NAMES or k.startswith(ENV_PREFIXES)) and k not in CLIENT_ONLY}


def service_key(env: dict[str, str] | None = None, package: Path = PACKAGE) -> str:
    """The key a command's service must have: 16 hex digits."""
    h = hashlib.sha256()
    for part in (code_fingerprint(package), sys.executable, sys.version, _torch_version(), str(package)):
        h.update(part.encode() + b"\0")
    for k, v in sorted(service_env(env).items()):
        h.update(f"{k}={v}\0".encode())
    return h.hexdigest()[:16]


def service_dir() -> Path:
    """Where services keep their sockets, locks and logs: ``$KBENCH_SERVE_DIR``, else
    ``/tmp/kbench-serve-<uid>`` (short: a socket's path has at most 107 bytes). Made private to
    this user; one that another user owns, or that others may write, is refused."""
    d = Path(os.environ.get(DIR_ENV) or f"/tmp/kbench-serve-{os.getuid()}")
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = d.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise PermissionError(f"{d}: not this user's own folder (owner uid {st.st_uid}, mode {oct(st.st_mode & 0o777)})")
    return d


def socket_path(key: str) -> Path:
    return service_dir() / f"{key}.sock"


def lock_path(key: str) -> Path:
    return service_dir() / f"{key}.lock"


def log_path(key: str) -> Path:
    return service_dir() / f"{key}.log"
