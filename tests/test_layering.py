"""The library's layering: no import cycle between its modules, and no module imports a layer above
its own.

The graph is read with ``ast`` from the source (nothing is imported): every ``import`` and
``from ... import`` of a ``kbench_lib`` module, relative ones and ``from . import x`` included, at
module level or inside a function (a lazy import is still a dependency: the code breaks without
it). Only imports under ``if TYPE_CHECKING:`` are left out: they never run.

The moved modules keep no alias at their old top-level paths (``timing`` directly under
``kbench_lib`` is gone; the module is ``kbench_lib.measure.timing``): no module of the package may be
one (``sys.modules[__name__] = _moved``). Should one come back, the graph still resolves an import
of it to the module it stands for, and ``test_no_module_is_an_alias`` fails.

The package's shape is checked too: at its top level only the modules a user imports by name
(:data:`TOP_LEVEL`), every other module in a subpackage; no module longer than
:data:`MAX_MODULE_LINES` lines and no function or method longer than :data:`MAX_FUNCTION_LINES`
(from its ``def`` line to its last), so that each can be read whole.

The layers, lowest first (a module's layer is that of the longest prefix below that names it;
modules of one layer may import each other, without cycles):
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kbench_lib"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # what every layer uses: core (paths, provenance, seeding, tracebacks, CPU sets, parameters, build
    # claims, candidates, the kernel DSLs' packages and sources, stopping a thread) and scoring (records, committed results,
    # flags, metrics, protocols)
    ("foundation", ("kbench_lib.core", "kbench_lib.scoring")),
    # measuring, in the candidate's process and the judge's: compare, tensors, timing, profiling
    ("measure", ("kbench_lib.measure",)),
    # the benchmark: problems, references, variants, problem checks and lint, roofline, stored baselines
    ("suite", ("kbench_lib.suite",)),
    # running untrusted code: sandbox, fork servers, the worker process (its stages and its entry)
    ("isolation", ("kbench_lib.isolation",)),
    # the judge's pipeline and its stages in the judge's process
    ("judging", ("kbench_lib.judging",)),
    # where candidates come from: models and samples, language models, corpora
    ("generation", ("kbench_lib.generation",)),
    # batches: locally (lanes, lane processes) or on Ray (the runner hands a batch to kbench_lib.cluster)
    ("batch", ("kbench_lib.batch", "kbench_lib.cluster")),
    # what runs batches and shows them: workflows, generation runs, reports (plots, a search's
    # metrics and plots, the lab's history)
    ("workflows", ("kbench_lib.workflows", "kbench_lib.generation.runs", "kbench_lib.reports")),
    ("strategies", ("kbench_lib.strategies",)),
    # the front: command line, the notebooks' lab, analysis
    ("front", ("kbench_lib.cli", "kbench_lib.lab", "kbench_lib.analysis", "kbench_lib.service")),
]

_ALIAS = re.compile(r"^\s*from (\.[\w.]*) import (\w+) as _moved$", re.M)


def _module_files() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        mods[".".join(parts)] = (path, is_package)
    return mods


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    if not level:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _aliases(mods: dict) -> dict[str, str]:
    """Old path -> the module it is (modules whose body makes ``sys.modules[__name__]`` another module)."""
    out = {}
    for name, (path, is_package) in mods.items():
        text = path.read_text()
        if "sys.modules[__name__] = _moved" in text:
            m = _ALIAS.search(text)
            assert m, f"{name}: an alias without its `from .x import y as _moved`"
            out[name] = _absolute(name, is_package, len(m.group(1)) - len(m.group(1).lstrip(".")),
                                  m.group(1).lstrip(".") or None) + "." + m.group(2)
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def import_graph() -> dict[str, set[str]]:
    """kbench_lib module -> the kbench_lib modules it imports (aliases resolved, aliases themselves left out)."""
    mods = _module_files()
    aliases = _aliases(mods)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        while name in aliases:
            name = aliases[name]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in mods.items():
        if module in aliases:
            continue
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        targets: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets.update(resolve(a.name) for a in node.names if a.name.startswith("kbench_lib"))
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(module, is_package, node.level, node.module)
                if not base.startswith("kbench_lib"):
                    continue
                for a in node.names:  # `from . import x`: x is a module; `from .m import f`: m is
                    full = f"{base}.{a.name}"
                    targets.add(resolve(full) if full in mods else resolve(base))
        targets.discard(None)
        targets.discard(module)
        graph[module] = {t for t in targets if not module.startswith(t + ".")}  # a package's own __init__ runs first anyway
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def layer_of(module: str, layers=LAYERS) -> int | None:
    if module == "kbench_lib":  # the package's own __init__: its version, no imports
        return 0
    best, found = -1, None
    for i, (_, prefixes) in enumerate(layers):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, found = len(p), i
    return found


def upward_imports(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    bad = []
    for module, targets in graph.items():
        for t in targets:
            if layer_of(t, layers) > layer_of(module, layers):
                bad.append(f"{module} ({layers[layer_of(module, layers)][0]}) imports {t} ({layers[layer_of(t, layers)][0]})")
    return sorted(bad)


# ----- the checks themselves can fail


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert find_cycles(graph) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_the_layer_check_finds_an_upward_import():
    layers = [("low", ("p.low",)), ("high", ("p.high", "p.low.exception"))]
    graph = {"p.low.x": {"p.high.y"}, "p.high.y": {"p.low.x"}, "p.low.exception": {"p.high.y"}}
    assert upward_imports(graph, layers) == ["p.low.x (low) imports p.high.y (high)"]


def test_the_graph_reads_relative_and_lazy_imports():
    graph = import_graph()
    assert "kbench_lib.core.cpu_sets" in graph["kbench_lib.measure.profiling"]  # `from ..core import cpu_sets`
    assert "kbench_lib.isolation.process_setup" in graph["kbench_lib.isolation.worker.start"]  # imported inside a function
    assert "kbench_lib.judging.pipeline" in graph["kbench_lib.lab"]  # `from .judging.pipeline import ...` inside a method
    assert "kbench_lib.batch.runner" not in graph["kbench_lib.batch.lane_host"]  # under TYPE_CHECKING only


def test_the_alias_check_finds_an_alias(tmp_path):
    alias = tmp_path / "timing.py"
    alias.write_text('"""Old home."""\nimport sys\n\nfrom .measure import timing as _moved\n\nsys.modules[__name__] = _moved\n')
    module = tmp_path / "records.py"
    module.write_text('"""A module that mentions sys.modules and _moved, and is no alias."""\n')
    mods = {"kbench_lib.old_timing": (alias, False), "kbench_lib.scoring.records": (module, False)}
    assert _aliases(mods) == {"kbench_lib.old_timing": "kbench_lib.measure.timing"}


# ----- the library


def test_no_import_cycle():
    assert find_cycles(import_graph()) == []


def test_every_module_has_a_layer():
    assert [m for m in import_graph() if layer_of(m) is None] == []


def test_no_module_imports_a_layer_above_its_own():
    assert upward_imports(import_graph()) == []


def missing_names() -> list[str]:
    """Every ``from <kbench_lib module> import name`` in the package, the lazy ones inside functions
    too, whose module has no such name (and no such submodule): an import that fails only when its
    function runs. A module that cannot be imported here (an optional dependency missing) is
    left out."""
    import importlib

    out = []
    for module, (path, is_package) in sorted(_module_files().items()):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _absolute(module, is_package, node.level, node.module)
            if not target.startswith("kbench_lib"):
                continue
            try:
                imported = importlib.import_module(target)
            except ImportError:
                continue
            for alias in node.names:
                if alias.name == "*" or hasattr(imported, alias.name):
                    continue
                try:
                    importlib.import_module(f"{target}.{alias.name}")
                except ImportError:
                    out.append(f"{module}:{node.lineno} from {target} import {alias.name}")
    return out


def test_every_name_imported_from_the_package_exists():
    assert missing_names() == []


def test_no_module_is_an_alias():
    assert _aliases(_module_files()) == {}


# once directly under kbench_lib: the first four as aliases, the rest as modules since moved to their rooms
OLD_TOP_LEVEL = ["judge", "runner", "timing", "problems", "paths", "provenance", "seeding", "tracebacks", "cpu_sets",
                 "params", "build_claim", "candidates", "records", "committed", "flags", "metrics", "protocols",
                 "models", "samples", "lane_process", "plots", "search_plots", "search_metrics", "lab_history", "worker"]


@pytest.mark.parametrize("old", OLD_TOP_LEVEL)
def test_old_paths_are_gone(old):
    from importlib.machinery import PathFinder

    # the package's own folders only: an editable install's finder may map the name to another checkout
    assert PathFinder.find_spec(f"kbench_lib.{old}", [str(PACKAGE)]) is None


# ----- the package's shape: every module in the room of its concern, none too long to read

TOP_LEVEL = ["__init__.py", "lab.py", "workflows.py"]  # what a user imports by name (and the package itself; the command line is the cli package)
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def test_the_top_level_holds_only_what_a_user_imports_by_name():
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == TOP_LEVEL


def test_no_module_is_too_long():
    lines = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {m: n for m, n in lines.items() if n > MAX_MODULE_LINES} == {}


def long_functions(tree: ast.AST, limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """Every function and method of ``tree`` longer than ``limit`` lines (its ``def`` line to its last),
    by dotted name within its module; nested ones count on their own too."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef) and child.end_lineno - child.lineno + 1 > limit:
                    out[name] = child.end_lineno - child.lineno + 1
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def test_the_function_length_check_finds_a_long_method():
    body = "\n".join(f"        x = {i}" for i in range(4))
    tree = ast.parse(f"class A:\n    def f(self):\n{body}\n\n\ndef g():\n    def h():\n{body}\n    return h\n")
    assert long_functions(tree, limit=4) == {"A.f": 5, "g": 7, "g.h": 5}


def test_no_function_is_too_long():
    found = {}
    for path in PACKAGE.rglob("*.py"):
        for name, n in long_functions(ast.parse(path.read_text())).items():
            found[f"{path.relative_to(PACKAGE)}:{name}"] = n
    assert found == {}


def test_the_layout_names_every_module():
    """docs/LAYOUT.md's table of rooms names each module (the prompt templates are examples, not modules)."""
    text = (PACKAGE.parent / "docs" / "LAYOUT.md").read_text()
    unnamed = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
               if p.stem not in ("__init__", "__main__") and "templates" not in p.parts and f"`{p.stem}`" not in text]
    assert unnamed == []
