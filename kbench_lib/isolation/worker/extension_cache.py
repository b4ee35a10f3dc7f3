"""Torch's JIT extension builds (``torch.utils.cpp_extension.load_inline`` and ``load``) as the
judge's build cache sees them, installed in the worker before any candidate code runs.

- A call that failed to compile fails again at once, with the same exception type and message,
  when the same call is made again: by the judging run after the build stage, or by the fresh
  model of the next configuration. Candidates often catch the failure and fall back to PyTorch;
  without this each of their models paid the whole failed compile again, on the judge's lane.
- An extension named after the process that builds it (``f"ext_{os.getpid()}"``, which published
  candidates use to keep processes apart) is named without it, so that the run loads what the build
  stage compiled rather than compiling its own copy on the judge's lane. The folder is the
  candidate's own cache entry, where torch's lock already keeps two builds of one name apart. Only
  for a source that calls ``getpid`` (:func:`names_by_pid`): in a PID namespace the id is small, and
  a fixed name such as ``conv_2`` must not change with it.
- The source files of a ``load`` (written afresh by the candidate, often into a temporary folder of
  each process's own) are read from copies in the entry, named by their contents and written once,
  so that torch's build finds the same files, unchanged, and does not compile them again. Where a
  source includes a file beside it that cannot go with it (in a folder below it, or of the same
  name as another's), the sources are left where they are.
- An extension built into a folder of the candidate's choosing (``build_directory``, often a
  relative ``cuda_extensions`` in the job folder that is deleted after the run) is built into the
  candidate's own cache entry instead, so that the build stage's compile is the one the run loads.

Nothing else changes: the sources and flags reach torch as given, and torch decides as
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
import re
import threading
from pathlib import Path

FAILED = "kbench-failed"  # <extensions dir>/kbench-failed/<call key>.json: a call that did not build
FOLDERS = "kbench-folders"  # <extensions dir>/kbench-folders/<call key>: a build_directory redirected
SOURCES = "kbench-sources"  # <extensions dir>/kbench-sources/<call key>: copies of a load's sources
QUOTED_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.MULTILINE)
UNRECORDED = (MemoryError,)  # failures of the moment, not of the sources: compiled again next time
# set by the build's warm-up call (.lazy_compile): a build that succeeds then raises Compiled, so that
# the warm-up ends with the extension compiled and none of its kernels run on the warm-up's tensors
WARMING = threading.Event()


class Compiled(BaseException):
    """The warm-up call's end: its extension is built (a BaseException: a candidate's fallback on
    ``except Exception`` does not go on with the call)."""


def call_key(fn, args: tuple, kwargs: dict, pid_names: bool = False) -> str:
    """The identity of one JIT build call: its function, every argument but where it builds and how
    loudly (with ``pid_names``, the name without this process's id), and for ``load`` the names and
    contents of its source files, not the folder they lie in."""
    return _key(fn, _bind(fn, args, kwargs, pid_names))


def names_by_pid(source: str) -> bool:
    """Whether a candidate's source may name its extensions after its process (it calls ``getpid``)."""
    return "getpid" in source


def stable_name(name: str, pid: int | None = None) -> str:
    """``name`` with this process's id (``pid``), where it stands as a word of its own, written
    ``pid``: ``conv_4711`` -> ``conv_pid``; ``v4711``, ``47110`` unchanged."""
    return re.sub(rf"(?<![0-9A-Za-z]){pid or os.getpid()}(?![0-9A-Za-z])", "pid", name)


def _bind(fn, args: tuple, kwargs: dict, pid_names: bool) -> inspect.BoundArguments:
    bound = inspect.signature(fn).bind(*args, **kwargs)
    if pid_names and isinstance(bound.arguments.get("name"), str):
        bound.arguments["name"] = stable_name(bound.arguments["name"])
    return bound


def _key(fn, bound: inspect.BoundArguments) -> str:
    arguments = {**{name: p.default for name, p in bound.signature.parameters.items()}, **bound.arguments}  # defaults filled in
    parts = {k: v for k, v in arguments.items() if k not in ("build_directory", "verbose")}
    if fn.__name__ == "load":
        sources = parts.get("sources")
        paths = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources or [])
        # each file by its name and contents, not by the folder it was written to (often a new one per process)
        parts["sources"] = [(Path(p).name, _file_digest(p)) for p in paths]
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


def cached(fn, root: Path, pid_names: bool = False):
    """``fn`` (``load_inline`` or ``load``) with failures remembered, names free of the process's id
    (``pid_names``), ``load``'s sources read from copies and build folders kept under ``root`` (the
    candidate's extensions folder)."""

    @functools.wraps(fn)
    def build(*args, **kwargs):
        bound = _bind(fn, args, kwargs, pid_names)
        key = _key(fn, bound)
        failed = root / FAILED / f"{key}.json"
        if failed.is_file():
            try:
                record = json.loads(failed.read_text())
            except (OSError, ValueError):
                record = None
            if isinstance(record, dict):
                raise _replay(record)
        if fn.__name__ == "load":
            _read_copies(bound, root / SOURCES / key)
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


def _read_copies(bound: inspect.BoundArguments, folder: Path) -> None:
    """A ``load``'s sources, and the headers beside them that they include, copied into ``folder``
    (written only where absent or changed, so their times stay those of the first copy) and read
    from there. Left as given where a source is unreadable or the files cannot share one folder."""
    sources = bound.arguments.get("sources")
    paths = [Path(sources)] if isinstance(sources, (str, os.PathLike)) else [Path(p) for p in sources or []]
    files: dict[str, bytes] = {}

    def take(path: Path) -> bool:
        try:
            data = path.read_bytes()
        except OSError:
            return False
        if path.name in files:
            return files[path.name] == data  # taken already, or another file of the same name
        files[path.name] = data
        for include in QUOTED_INCLUDE.findall(data):
            name = include.decode(errors="replace")
            beside = path.parent / name
            if not beside.exists():
                continue  # found on the include path (torch's, CUDA's), from the copy as from the source
            if Path(name).name != name or not beside.is_file() or not take(beside):
                return False  # a header in a folder below it: it stays where it is, with its source
        return True

    if not paths or len({p.name for p in paths}) < len(paths) or not all(take(p) for p in paths):
        return
    try:
        for name, data in files.items():
            target = folder / name
            if not (target.is_file() and target.read_bytes() == data):
                folder.mkdir(parents=True, exist_ok=True)
                tmp = folder / f".{name}.{os.getpid()}.tmp"
                tmp.write_bytes(data)
                os.replace(tmp, target)
    except OSError:
        return  # an unwritable entry: the sources stay where they are
    copies = [str(folder / p.name) for p in paths]
    bound.arguments["sources"] = copies[0] if isinstance(sources, (str, os.PathLike)) else copies


def _remember(path: Path, e: BaseException) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"type": type(e).__name__, "message": str(e)}))
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs the next call its compile


def install(root: str | None = None, pid_names: bool = False) -> bool:
    """Wraps torch's JIT build entry points for this process; ``root`` defaults to
    ``TORCH_EXTENSIONS_DIR`` (set by the judge to the candidate's cache entry); ``pid_names``: the
    candidate's source calls ``getpid`` (:func:`names_by_pid`). False where there is no root:
    nothing is wrapped."""
    root = root or os.environ.get("TORCH_EXTENSIONS_DIR")
    if not root:
        return False
    import torch.utils.cpp_extension as cpp_extension

    for name in ("load_inline", "load"):
        fn = getattr(cpp_extension, name)
        if getattr(fn, "__kbench_cached__", False):
            continue
        wrapped = cached(fn, Path(root), pid_names)
        wrapped.__kbench_cached__ = True
        setattr(cpp_extension, name, wrapped)
    return True
