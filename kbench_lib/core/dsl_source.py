"""What a candidate's source says about the kernel DSLs, read with ``ast`` (nothing runs): which
DSL it imports, and whether it defines a kernel in one.

A name is followed through the imports that bind it (``import cutlass.cute as cute``, ``from
cutlass import cute``, ``import tilelang.language as T``, ``from tilelang.language import Kernel``),
so ``@cute.kernel`` and ``@T.prim_func`` are read as ``cutlass.cute.kernel`` and
``tilelang.language.prim_func`` whatever the source calls them.

- CuTe DSL (``cute``): a kernel is a function decorated ``@cute.kernel``; ``@cute.jit`` marks the
  host function that launches it.
- TileLang (``tilelang``): a kernel is a function decorated ``@T.prim_func`` or ``@tilelang.jit``
  whose body opens a ``with T.Kernel(...)`` block (the launch grid and the device code).
"""
from __future__ import annotations

import ast

BACKEND_OF_ROOT = {"cutlass": "cute", "tilelang": "tilelang"}  # a DSL's top-level package -> its backend
ROOTS = tuple(BACKEND_OF_ROOT)
CUTE_KERNEL = "cutlass.cute.kernel"
CUTE_DECORATORS = (CUTE_KERNEL, "cutlass.cute.jit")
TILELANG_DECORATORS = ("tilelang.language.prim_func", "tilelang.jit")
TILELANG_KERNEL = "tilelang.language.Kernel"
TILELANG_CALLS = ("tilelang.compile", "tilelang.jit")


def bound_names(tree: ast.AST) -> dict[str, str]:
    """Each name the source binds to a DSL module or object by an import -> the dotted path it stands for."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in ROOTS:
                    # ``import cutlass.cute`` binds ``cutlass``; ``import cutlass.cute as cute`` binds ``cute``
                    names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in ROOTS:
            for a in node.names:
                if a.name != "*":
                    names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def dotted(node: ast.AST, names: dict[str, str]) -> str:
    """The dotted path of a name or attribute chain, its root replaced by what an import bound it to."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(names.get(node.id, node.id))
    return ".".join(reversed(parts))


def _decorators(fn: ast.AST, names: dict[str, str]) -> set[str]:
    return {dotted(d.func if isinstance(d, ast.Call) else d, names) for d in fn.decorator_list}


def _functions(tree: ast.AST):
    return (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def imported(tree: ast.AST) -> str | None:
    """The DSL backend whose package the source imports (``cute`` for ``cutlass``, ``tilelang``), or None."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            tops = [(node.module or "").split(".")[0]]
        else:
            continue
        for top in tops:
            if top in BACKEND_OF_ROOT:
                return BACKEND_OF_ROOT[top]
    return None


def sniff(tree: ast.AST) -> str | None:
    """The DSL backend whose kernel machinery the source uses (a decorator of either DSL, a call to
    ``tilelang.compile``), or None."""
    names = bound_names(tree)
    if not names:
        return None
    for fn in _functions(tree):
        found = _decorators(fn, names)
        if found & set(CUTE_DECORATORS):
            return "cute"
        if found & set(TILELANG_DECORATORS):
            return "tilelang"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and dotted(node.func, names) in TILELANG_CALLS:
            return "tilelang"
    return None


def _opens_tilelang_kernel(fn: ast.AST, names: dict[str, str]) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and dotted(call.func, names) == TILELANG_KERNEL:
                    return True
    return False


def defines_kernel(tree: ast.AST, backend: str) -> bool:
    """Whether the source defines a kernel of ``backend``'s DSL (module docstring)."""
    names = bound_names(tree)
    for fn in _functions(tree):
        found = _decorators(fn, names)
        if backend == "cute" and CUTE_KERNEL in found:
            return True
        if backend == "tilelang" and found & set(TILELANG_DECORATORS) and _opens_tilelang_kernel(fn, names):
            return True
    return False


KERNEL_WORDS = {
    "cute": "defines no @cute.kernel function",
    "tilelang": "defines no T.prim_func (or @tilelang.jit function) that opens a T.Kernel",
}

__all__ = ["BACKEND_OF_ROOT", "CUTE_DECORATORS", "CUTE_KERNEL", "KERNEL_WORDS", "ROOTS", "TILELANG_DECORATORS", "TILELANG_KERNEL", "bound_names",
           "defines_kernel", "dotted", "imported", "sniff"]
