"""Torch's JIT extension builds (``torch.utils.cpp_extension.load_inline`` and ``load``) as the
judge's build cache sees them, installed in the worker before any candidate code runs.

- A call that failed to compile fails again at once, with the same exception type and message,
  when the same call is made again: by the judging run after the build stage, or by the fresh
  model of the next configuration. Candidates often catch the failure and fall back to PyTorch;
  without this each of their models paid the whole failed compile again, on the judge's lane.
- An extension built into a folder of the candidate's choosing (``build_directory``, often a
  relative ``cuda_extensions`` in the job folder that is deleted after the run) is built into the
  candidate's own cache entry instead, so that the build stage's compile is the one the run loads.

Nothing else changes: the sources, flags and names reach torch as given, and torch decides as
always whether a built extension is current. A compile is deterministic for one toolchain, which
the cache entry's key already holds (:func:`kbench_lib.judging.build.build_key`); the cache entry
is the candidate's own (keyed by its source), so what one candidate leaves there no other reads.
"""
from __future__ import annotations

import builtins
import functools
import hashlib
import inspect
import json
import os
import threading
from pathlib import Path

FAILED = "kbench-failed"  # <extensions dir>/kbench-failed/<call key>.json: a call that did not build
FOLDERS = "kbench-folders"  # <extensions dir>/kbench-folders/<call key>: a build_directory redirected
UNRECORDED = (MemoryError,)  # failures of the moment, not of the sources: compiled again next time
# set by the build's warm-up call (.lazy_compile): a build that succeeds then raises Compiled, so that
# the warm-up ends with the extension compiled and none of its kernels run on the warm-up's tensors
WARMING = threading.Event()


class Compiled(BaseException):
    """The warm-up call's end: its extension is built (a BaseException: a candidate's fallback on
    ``except Exception`` does not go on with the call)."""


def call_key(fn, args: tuple, kwargs: dict) -> str:
    """The identity of one JIT build call: its function, every argument but where it builds and how
    loudly, and the contents of the source files ``load`` reads."""
    return _key(fn, inspect.signature(fn).bind(*args, **kwargs))


def _key(fn, bound: inspect.BoundArguments) -> str:
    arguments = {**{name: p.default for name, p in bound.signature.parameters.items()}, **bound.arguments}  # defaults filled in
    parts = {k: v for k, v in arguments.items() if k not in ("build_directory", "verbose")}
    if fn.__name__ == "load":
        sources = parts.get("sources")
        paths = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources or [])
        parts["source_contents"] = [_file_digest(p) for p in paths]
    text = json.dumps({"fn": fn.__name__, **parts}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _file_digest(path) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as e:
        return f"unreadable ({type(e).__name__})"


def _replay(record: dict) -> BaseException:
    cls = getattr(builtins, record.get("type", ""), None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = RuntimeError
    return cls(record.get("message", ""))


def cached(fn, root: Path):
    """``fn`` (``load_inline`` or ``load``) with failures remembered and build folders kept under
    ``root`` (the candidate's extensions folder)."""

    @functools.wraps(fn)
    def build(*args, **kwargs):
        bound = inspect.signature(fn).bind(*args, **kwargs)
        key = _key(fn, bound)
        failed = root / FAILED / f"{key}.json"
        if failed.is_file():
            try:
                record = json.loads(failed.read_text())
            except (OSError, ValueError):
                record = None
            if isinstance(record, dict):
                raise _replay(record)
        if bound.arguments.get("build_directory") is not None:
            folder = root / FOLDERS / key
            folder.mkdir(parents=True, exist_ok=True)
            bound.arguments["build_directory"] = str(folder)
        try:
            result = fn(*bound.args, **bound.kwargs)
        except Exception as e:
            if not isinstance(e, UNRECORDED):
                _remember(failed, e)
            raise
        if WARMING.is_set():
            raise Compiled
        return result

    return build


def _remember(path: Path, e: BaseException) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"type": type(e).__name__, "message": str(e)}))
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs the next call its compile


def install(root: str | None = None) -> bool:
    """Wraps torch's JIT build entry points for this process; ``root`` defaults to
    ``TORCH_EXTENSIONS_DIR`` (set by the judge to the candidate's cache entry). False where there is
    none: nothing is wrapped."""
    root = root or os.environ.get("TORCH_EXTENSIONS_DIR")
    if not root:
        return False
    import torch.utils.cpp_extension as cpp_extension

    for name in ("load_inline", "load"):
        fn = getattr(cpp_extension, name)
        if getattr(fn, "__kbench_cached__", False):
            continue
        wrapped = cached(fn, Path(root))
        wrapped.__kbench_cached__ = True
        setattr(cpp_extension, name, wrapped)
    return True
