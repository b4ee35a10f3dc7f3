"""What a Triton solution launches on a problem's default inputs, found without a GPU.

The tuner (:mod:`.tuner`) changes constants; many of them do nothing at the size that is timed (a
threshold that no block size crosses, the warps of a branch not taken), and proposing such a
configuration judges the same kernel again. :func:`launch_record` runs the candidate's ``forward``
on the ``meta`` device (shapes, no data, no kernels) with Triton's launches recorded instead of run
and PyTorch's operators recorded as they dispatch: the kernel sources, grids, constexpr and scalar
arguments, ``num_warps``/``num_stages``, and every ATen call with its shapes. Two configurations
with the same record run the same kernels on the same launch grids at the timed size.

This executes the candidate's Python in the calling process, so the tuner does it only for seeds
it trusts (the repository's own ``problems/solutions``): the judge never runs candidate code. A
source that names ``cuda`` anywhere is not run (the process that forks the judge's workers keeps
CUDA uninitialised).
"""
from __future__ import annotations

import hashlib
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ..suite.problems import Problem, instantiate

_LOCK = threading.Lock()  # the launch hook is process-wide while it is in place


@dataclass(frozen=True)
class Launch:
    kernel: str  # the kernel's name and a hash of its source
    grid: tuple
    args: tuple  # scalars as given, tensors as (dtype, shape, stride)
    options: tuple  # sorted (name, value) of keyword arguments that are not tensors


@dataclass(frozen=True)
class Record:
    launches: tuple[Launch, ...]
    ops: tuple  # (ATen operator, its arguments' description), in order

    @property
    def key(self) -> str:
        return hashlib.sha256(repr((self.launches, self.ops)).encode()).hexdigest()


def _describe(value):
    import torch

    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), tuple(value.stride()))
    if isinstance(value, (list, tuple)):
        return tuple(_describe(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _describe(v)) for k, v in value.items()))
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return str(value)
    return type(value).__name__


def _kernel_classes():
    classes = []
    try:
        from triton.runtime.jit import KernelInterface

        classes.append(KernelInterface)
        from triton.runtime.jit import JITFunction

        classes.append(JITFunction)
    except ImportError:
        return []
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except ImportError:
        pass
    return [c for c in classes if "__getitem__" in vars(c)]


def launch_record(problem: Problem, source: str) -> Record | None:
    """The launches and operators of ``source``'s ``ModelNew`` on ``problem``'s default inputs,
    on the meta device; None when the candidate cannot run there (data-dependent code, a missing
    name, no Triton, ...): the caller then has nothing to compare."""
    if "cuda" in source:  # it might touch the GPU (a stream, a device): this process keeps CUDA uninitialised
        return None
    try:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError:
        return None
    launches: list[Launch] = []
    ops: list = []

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            ops.append((str(func), _describe(args), _describe(kwargs or {})))
            return func(*args, **(kwargs or {}))

    def hooked(fn, grid):
        def launch(*args, **kwargs):
            options = {k: v for k, v in kwargs.items() if not isinstance(v, torch.Tensor)}
            g = grid(dict(options)) if callable(grid) else grid
            src = getattr(fn, "src", None) or getattr(getattr(fn, "fn", None), "src", None) or ""
            name = getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", "kernel")
            launches.append(Launch(f"{name}#{hashlib.sha256(src.encode()).hexdigest()[:12]}", _describe(tuple(g) if isinstance(g, (list, tuple)) else (g,)),
                                   _describe(args), tuple(sorted((k, _describe(v)) for k, v in options.items()))))
        return launch

    with _LOCK:
        classes = _kernel_classes()
        if not classes:
            return None
        saved = {c: vars(c)["__getitem__"] for c in classes}
        try:
            for c in classes:
                c.__getitem__ = lambda self, grid: hooked(self, grid)
            namespace = instantiate(problem)
            module: dict = {"__name__": f"kbench_tune_probe_{problem.sha}"}
            with tempfile.TemporaryDirectory(prefix="kbench-tune-probe-") as folder:  # Triton reads a kernel's source from its file
                path = Path(folder) / "candidate.py"
                path.write_text(source)
                exec(compile(source, str(path), "exec"), module)
            with torch.device("meta"):
                model = module["ModelNew"](*namespace["get_init_inputs"]())
                inputs = namespace["get_inputs"]()
            with torch.no_grad(), Ops():
                model(*inputs)
        except Exception:  # noqa: BLE001 - what cannot run on the meta device is simply not compared
            return None
        finally:
            for c, getitem in saved.items():
                c.__getitem__ = getitem
    if not launches:
        return None  # nothing of Triton's ran: the record would not tell its constants apart
    return Record(tuple(launches), tuple(ops))
