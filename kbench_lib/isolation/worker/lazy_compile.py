"""Build mode, after ``built`` is reported: the warm-up of an extension the candidate compiles only
at its first call (:func:`compiles_lazily` tells such a candidate from its source, before it is
imported; :func:`call_on_fake` makes that first call under torch's fake tensors, on the judge's
device, and the extension cache ends it once the extension is built).

The warm-up is best effort. It runs after the build has reported its result, so whatever it does
(a raise, a crash, an abort, the build's time limit) cannot fail the build or lose its result: the run then
compiles the extension itself, as it did before the warm-up existed.
"""
from __future__ import annotations

import ast

import torch

JIT_BUILDS = frozenset({"torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load"})
EAGER_FUNCTIONS = frozenset({"__init__"})  # what a function of this name compiles, the build's model made it compile


def compiles_lazily(source: str) -> bool:
    """Whether ``source`` calls torch's JIT build (``load_inline`` or ``load`` of
    ``torch.utils.cpp_extension``, under any name an import gives it: ``from ... import load_inline
    as li``, ``import torch.utils.cpp_extension as ce``, ``torch.utils.cpp_extension.load``) in a
    function that only a call of the model runs: ``forward``, or a helper it calls.

    Not lazy (False): a call at module level or in a class body (it runs at import), in
    ``__init__`` (the build makes one model), or in a helper that is only ever called, by its name,
    from those places (``_ext = _build()`` at module level). A helper referenced any other way
    (passed, wrapped, stored, or not referenced at all: ``forward`` is called by ``nn.Module``) is
    taken as lazy. A source that does not parse is not lazy (its import fails the build)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    aliases = _import_aliases(tree)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    functions = [_enclosing_function(node, parents) for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and _qualified(node.func, aliases) in JIT_BUILDS]
    uses = _references(tree, parents)
    known: dict = {}
    return any(not _eager(f, uses, known) for f in functions)


def _import_aliases(tree: ast.AST) -> dict[str, str]:
    """Each name an import binds (anywhere in the source) -> the dotted path it stands for."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:  # ``import torch.utils.cpp_extension`` binds ``torch``
                root = a.name.split(".")[0]
                aliases.update({a.asname: a.name} if a.asname else {root: root})
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                if a.name == "*":  # ``from torch.utils.cpp_extension import *``
                    aliases.update({n.rsplit(".", 1)[1]: n for n in JIT_BUILDS if n.rsplit(".", 1)[0] == node.module})
                else:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _qualified(expr: ast.expr, aliases: dict[str, str]) -> str | None:
    """The dotted path a call's function names (``ce.load_inline`` -> ``torch.utils.cpp_extension.load_inline``), or None."""
    attrs = []
    while isinstance(expr, ast.Attribute):
        attrs.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or expr.id not in aliases:
        return None
    return ".".join([aliases[expr.id], *reversed(attrs)])


def _enclosing_function(node: ast.AST, parents: dict) -> ast.AST | None:
    """The innermost function (or lambda) ``node`` lies in; None at module level or in a class body."""
    node = parents.get(node)
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        node = parents.get(node)
    return node


def _references(tree: ast.AST, parents: dict) -> dict[str, list[tuple[bool, ast.AST | None]]]:
    """Each name -> its uses: (whether the use is a call of it, the function the use lies in)."""
    uses: dict[str, list] = {}
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is not None and isinstance(node.ctx, ast.Load):
            parent = parents.get(node)
            called = isinstance(parent, ast.Call) and parent.func is node
            uses.setdefault(name, []).append((called, _enclosing_function(node, parents)))
    return uses


def _eager(function: ast.AST | None, uses: dict, known: dict | None = None, path: frozenset = frozenset()) -> bool:
    """Whether ``function`` (None: module level) runs only at import or in ``__init__``: it is
    ``__init__``, or every use of its name is a call from a place that does. ``path``: the
    functions this question came through (a recursion is not eager); ``known``: the answers so far
    (each function is asked once, however many paths lead to it)."""
    if function is None:
        return True
    name = getattr(function, "name", None)
    if name in EAGER_FUNCTIONS:
        return True
    if name is None or function in path or not uses.get(name):
        return False  # a lambda, a recursion, a function nothing names: called from who knows where
    known = {} if known is None else known
    if function not in known:
        known[function] = all(called and _eager(where, uses, known, path | {function}) for called, where in uses[name])
    return known[function]


def call_on_fake(ModelNew: type, problem, device: str) -> None:
    """One forward of a ``ModelNew`` made under torch's fake tensors on ``device`` (the judge's:
    ``cuda`` on a GPU), on the problem's inputs made there: shapes, dtypes and devices without memory
    or arithmetic, so that ``x.is_cuda`` is true and a ``forward`` that checks it before compiling
    reaches its ``load_inline``. The extension cache (:data:`.extension_cache.WARMING`) ends the call
    as soon as that build returns, so none of its kernels runs on the fake tensors. Called after
    ``built`` is reported: whatever the call raises (data-dependent code, a raw data pointer read
    before the build) only leaves the compile to the run, as before."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from .extension_cache import WARMING

    WARMING.set()
    try:
        # made on the device (its default device), not moved there: Module.to swaps each parameter
        # for its copy, which fake parameters refuse ("Couldn't swap ModelNew.weight")
        with FakeTensorMode(allow_non_fake_inputs=True), torch.device(device):
            model = ModelNew(*problem.get_init_inputs())
            inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
            with torch.no_grad():
                model(*inputs)
    except BaseException:  # noqa: BLE001 - Compiled (the build is done) or what the fake tensors could not run
        pass
    finally:
        WARMING.clear()
