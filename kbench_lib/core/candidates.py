"""Candidates: untrusted Python source defining ``class ModelNew(nn.Module)``.

Nothing here executes a candidate; it only reads its source (with ``ast``) to name its backend.
Backends: ``cuda`` (CUDA C++ through ``torch.utils.cpp_extension.load_inline``), ``triton``
(``@triton.jit``), ``cpp`` (C++ through ``load_inline``, CPU), ``cute`` (NVIDIA's CuTe DSL:
``@cute.kernel``, ``@cute.jit``), ``tilelang`` (TileLang: ``@T.prim_func``, ``@tilelang.jit``) and
``torch`` (plain PyTorch). A header comment ``# kbench: backend=<name>`` overrides the detection.
A source that uses neither DSL's kernel machinery but imports one of them is that DSL's candidate
(one that then defines no kernel is flagged ``no_custom_kernel``, :mod:`kbench_lib.judging.guards`).
"""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from . import dsl_source

BACKENDS = ("cuda", "triton", "cpp", "cute", "tilelang", "torch")
KERNEL_BACKENDS = tuple(b for b in BACKENDS if b != "torch")  # those whose candidates must write a kernel of their own
_HEADER_RE = re.compile(r"^#\s*kbench:\s*backend\s*=\s*(\w+)", re.MULTILINE)


@dataclass(frozen=True)
class Candidate:
    source: str
    backend: str
    name: str = "candidate"
    path: Path | None = None

    @property
    def sha(self) -> str:
        """Content hash: identical sources share one build."""
        return hashlib.sha256(f"{self.backend}\0{self.source}".encode()).hexdigest()


def _calls(tree: ast.AST, name: str):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name):
                yield node


def detect_backend(source: str) -> str:
    """Best guess of a candidate's backend from its source; ``torch`` if nothing custom is found."""
    m = _HEADER_RE.search(source)
    if m and m.group(1) in BACKENDS:
        return m.group(1)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "torch"
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                if isinstance(target, ast.Attribute) and target.attr in ("jit", "autotune") and isinstance(target.value, ast.Name) and target.value.id == "triton":
                    return "triton"
    dsl = dsl_source.sniff(tree)
    if dsl:
        return dsl
    builds = list(_calls(tree, "load_inline")) + [c for c in _calls(tree, "load") if any(k.arg == "sources" for k in c.keywords)]
    for call in builds:
        if any(kw.arg == "cuda_sources" for kw in call.keywords) or len(call.args) >= 3:
            return "cuda"
        if any(kw.arg == "sources" for kw in call.keywords) and (".cu" in source or "__global__" in source):
            return "cuda"
    if builds:
        return "cpp"
    return dsl_source.imported(tree) or "torch"


def load_candidate(path: str | Path, backend: str | None = None) -> Candidate:
    path = Path(path)
    source = path.read_text()
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    return Candidate(source=source, backend=backend or detect_backend(source), name=path.stem, path=path.resolve())
