"""The DSL backends' packages: NVIDIA's CuTe DSL (``cute``) and TileLang (``tilelang``).

Both compile their kernels in the candidate's own process, from Python, when the candidate runs
(at import, in ``__init__`` or at the first call), so the judge needs them installed in its own
interpreter, which its workers share. They are the optional extra ``dsl`` (``pip install
'kbench[dsl]'``); where one is missing, a candidate of its backend fails at once with one line that
names the extra (:func:`unavailable`), and the batch goes on.

Each keeps compiled kernels in an on-disk cache of its own, named by an environment variable read
from the packages' source: ``CUTE_DSL_CACHE_DIR`` (CuTe DSL's ``base_dsl/cache_helpers.py``,
``get_default_generated_ir_path``; used by ``@cute.jit`` functions called directly, while
``cute.compile`` never caches: ``base_dsl/compiler.py`` sets ``no_cache``) and
``TILELANG_CACHE_DIR`` (TileLang's ``env.py``, read by ``cache/kernel_cache.py``: every
``tilelang.compile`` and ``@tilelang.jit`` kernel, source, host wrapper and binary). The judge points
both into the candidate's build-cache entry (:func:`kbench_lib.judging.build.build_env`), so that a
kernel the build stage compiled is the one the run loads, and no candidate reads another's.

Nothing here imports a DSL: the judge's process only asks whether one is installed and which
version (package metadata); the worker imports it (:func:`kbench_lib.isolation.worker.start._import_backend`).
"""
from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import types
from dataclasses import dataclass

EXTRA = "dsl"
INSTALL = f"pip install 'kbench[{EXTRA}]'"


@dataclass(frozen=True)
class DslPackage:
    backend: str
    title: str  # what the package is called in messages
    distribution: str  # its name on PyPI
    modules: tuple[str, ...]  # what the worker imports before the candidate (the first is the top-level package)
    cache_env: str  # the environment variable that names its on-disk kernel cache
    cache_folder: str  # that cache's folder in the candidate's build-cache entry
    compiler_paths: tuple[str, ...]  # where its compiler's frames are (path fragments)
    runner_paths: tuple[str, ...]  # where the code that runs compiled kernels is, inside those


PACKAGES = {
    "cute": DslPackage(
        backend="cute", title="NVIDIA's CuTe DSL", distribution="nvidia-cutlass-dsl",
        modules=("cutlass", "cutlass.cute", "cutlass.cute.runtime"), cache_env="CUTE_DSL_CACHE_DIR", cache_folder="cute-dsl",
        compiler_paths=("/cutlass/",),
        runner_paths=("jit_executor", "/cutlass/base_dsl/runtime/", "_adapter.py", "/cutlass/cute/runtime.py", "/cutlass/torch.py",
                      "/cutlass/base_dsl/torch.py"),
    ),
    "tilelang": DslPackage(
        backend="tilelang", title="TileLang", distribution="tilelang",
        modules=("tilelang", "tilelang.language"), cache_env="TILELANG_CACHE_DIR", cache_folder="tilelang",
        compiler_paths=("/tilelang/",),
        runner_paths=("/tilelang/jit/kernel.py", "/tilelang/jit/adapter/tvm_ffi.py", "/tilelang/jit/adapter/base.py",
                      "/tilelang/jit/adapter/cython/", "/tilelang/jit/adapter/torch/", "/tilelang/profiler/", "/tilelang/utils/tensor.py"),
    ),
}
DSL_BACKENDS = tuple(PACKAGES)


def is_dsl(backend: str) -> bool:
    return backend in PACKAGES


@functools.lru_cache(maxsize=None)
def version(backend: str) -> str | None:
    """The installed version of ``backend``'s package (from its metadata, nothing imported), or None;
    read once per process (the build cache's key holds it)."""
    pkg = PACKAGES.get(backend)
    if pkg is None:
        return None
    try:
        return importlib.metadata.version(pkg.distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _findable(backend: str) -> bool:
    """Whether the package's top-level module is on this interpreter's path (nothing imported)."""
    try:
        return importlib.util.find_spec(PACKAGES[backend].modules[0]) is not None
    except (ImportError, ValueError):
        return False


def installed(backend: str) -> bool:
    return version(backend) is not None and _findable(backend)


def missing_message(backend: str) -> str:
    pkg = PACKAGES[backend]
    return f"the {backend} backend needs {pkg.title} (the {pkg.distribution} package), which is not installed here: {INSTALL}"


def unavailable(backend: str, device: str) -> str | None:
    """Why a ``backend`` candidate cannot be built for ``device`` here, in one line (None: it can,
    or it is not a DSL backend): its package is missing, or the device is not a CUDA GPU."""
    if not is_dsl(backend):
        return None
    if not installed(backend):
        if version(backend) is not None:  # its metadata is there, its module is not (a .pth file left unread)
            pkg = PACKAGES[backend]
            return (f"the {backend} backend's package ({described(backend)}) is installed, but its module {pkg.modules[0]} "
                    f"is not on this interpreter's path")
        return missing_message(backend)
    if not device.startswith("cuda"):
        return f"the {backend} backend compiles for CUDA GPUs only, not for the device {device!r}"
    return None


def described(backend: str) -> str | None:
    """``backend``'s package and version in words (for verdicts' notes and failure messages), or None."""
    v = version(backend)
    return f"{PACKAGES[backend].distribution} {v}" if v and is_dsl(backend) else None


def _frames(tb: types.TracebackType | None) -> list[str]:
    files = []
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename.replace("\\", "/"))
        tb = tb.tb_next
    return files


def raised_compiling(e: BaseException, backend: str) -> bool:
    """Whether ``e`` was raised while ``backend``'s DSL traced or compiled a kernel (a compile
    error), rather than while a compiled kernel was called (a runtime error): the deepest frame of
    the DSL's package is in its compiler, not in the code that runs compiled kernels. An error the
    candidate's own code raises while the DSL traces it (a kernel body using an API this version
    lacks) is a compile error too: the DSL's tracer is below it."""
    pkg = PACKAGES.get(backend)
    if pkg is None:
        return False
    own = [f for f in _frames(e.__traceback__) if any(p in f for p in pkg.compiler_paths)]
    return bool(own) and not any(p in own[-1] for p in pkg.runner_paths)


__all__ = ["DSL_BACKENDS", "DslPackage", "EXTRA", "INSTALL", "PACKAGES", "described", "installed", "is_dsl",
           "missing_message", "raised_compiling", "unavailable", "version"]
