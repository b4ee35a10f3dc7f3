"""Problems: loading KernelBench-format files and applying their configurations.

A problem file defines ``Model``, ``get_inputs`` and ``get_init_inputs`` over module-level
constants; kbench's optional extensions are ``VARIANTS``, ``SMALL``, ``SMALL_VARIANTS``, ``TAGS``,
``TASK``, ``DERIVE_VARIANTS`` and ``SIZE_CONSTANTS`` (see docs/PROBLEM_FORMAT.md). Where a problem
declares fewer than two variants for the size in use, :mod:`kbench_lib.suite.variants` derives more. A configuration is applied by executing the file in a
fresh namespace and overwriting the named constants before anything is built.

Problem files are trusted code (they are the benchmark); candidates never run through here.
"""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# the derived configurations of Problem.configs: kbench_lib.suite.variants sets this when imported (the
# kbench_lib.suite package imports it, so it is set before any problem is loaded); variants validates
# derived variants through the problem checks, which import this module, so this module never imports it
_DERIVED_CONFIGS = None


def _derived_configs(problem: "Problem", small: bool, device: str | None) -> list:
    if _DERIVED_CONFIGS is None:
        raise RuntimeError("kbench_lib.suite.variants is not imported (import kbench_lib.suite first)")
    return _DERIVED_CONFIGS(problem, small, device)


EXTENSION_NAMES = ("VARIANTS", "SMALL", "SMALL_VARIANTS", "TAGS", "TASK", "DERIVE_VARIANTS", "SIZE_CONSTANTS")
_NAME_RE = re.compile(r"^(\d+)_(.+)$")


class ProblemError(Exception):
    """The problem file itself is malformed (not the candidate's fault)."""


@dataclass(frozen=True)
class Config:
    """One configuration of a problem: a name and the constants it overrides."""

    name: str
    overrides: dict = field(default_factory=dict)
    derived: bool = False  # made by kbench_lib.suite.variants from the file's size constants, not declared
    # the mode both models run in: "train" (as KernelBench builds them) or "eval" (``model.eval()``,
    # the eval configuration of :func:`eval_config`)
    mode: str = "train"

    @property
    def model_name(self) -> str:
        """The configuration whose models this one runs (an eval configuration runs its training
        configuration's model, switched to eval mode)."""
        return model_name(self.name)


EVAL_SUFFIX = "/eval"


def eval_config(config: Config) -> Config:
    """``config`` in eval mode: the same constants, both models switched to eval mode
    (``default/eval``)."""
    return Config(config.name + EVAL_SUFFIX, dict(config.overrides), config.derived, mode="eval")


def model_name(config_name: str) -> str:
    """The name of the training configuration behind ``config_name`` (itself for one in training mode)."""
    return config_name[: -len(EVAL_SUFFIX)] if config_name.endswith(EVAL_SUFFIX) else config_name


def mode_of(config_name: str) -> str:
    """The mode a configuration of this name runs in."""
    return "eval" if config_name.endswith(EVAL_SUFFIX) else "train"


@dataclass(frozen=True)
class Problem:
    path: Path
    source: str
    level: str  # "level1", "level2", "level3", "robust" or the parent folder's name
    number: int | None
    name: str
    tags: tuple[str, ...]
    task: str  # "forward" or "backward"
    variants: tuple[dict, ...]
    small: dict
    small_variants: tuple[dict, ...]
    derive_variants: bool = True  # DERIVE_VARIANTS: derive variants where fewer than two are declared
    size_constants: tuple[str, ...] | None = None  # SIZE_CONSTANTS: the constants derivation may change

    @property
    def key(self) -> str:
        """Stable identifier, e.g. ``level1/19_ReLU``."""
        return f"{self.level}/{self.path.stem}"

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def declared_configs(self, small: bool = False) -> list[Config]:
        """The default configuration first (the timed one), then every declared variant."""
        if small:
            base = Config("small", dict(self.small))
            rest = [Config(f"small_variant{i}", dict(v)) for i, v in enumerate(self.small_variants)]
        else:
            base = Config("default", {})
            rest = [Config(f"variant{i}", dict(v)) for i, v in enumerate(self.variants)]
        return [base, *rest]

    def configs(self, small: bool = False, device: str | None = None) -> list[Config]:
        """The declared configurations, then (where fewer than two variants are declared for this
        size) the derived ones, validated on ``device`` (default: the CPU for SMALL, the GPU when
        there is one for full size); see :mod:`kbench_lib.suite.variants`."""
        configs = self.declared_configs(small)
        configs += _derived_configs(self, small, device)
        return configs


def _literal_assignments(tree: ast.Module) -> dict[str, Any]:
    """Module-level ``NAME = <literal>`` assignments, read without executing the file."""
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in EXTENSION_NAMES:
                try:
                    found[name] = ast.literal_eval(node.value)
                except ValueError:
                    found[name] = _eval_dict_calls(node.value)
    return found


def _eval_dict_calls(node: ast.AST) -> Any:
    """literal_eval that also accepts ``dict(a=1, ...)`` calls (a common way to write variants)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return {kw.arg: _eval_dict_calls(kw.value) for kw in node.keywords}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_eval_dict_calls(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_eval_dict_calls(k): _eval_dict_calls(v) for k, v in zip(node.keys, node.values)}
    return ast.literal_eval(node)


def load_problem(path: str | Path, level: str | None = None) -> Problem:
    """Parse a problem file's metadata (the file is not executed here)."""
    path = Path(path)
    try:
        source = path.read_text()
    except OSError as e:
        raise ProblemError(f"cannot read problem file {path}: {e}") from e
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as e:
        raise ProblemError(f"problem file {path} has a syntax error: {e}") from e
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    missing = {"Model", "get_inputs", "get_init_inputs"} - defined
    if missing:
        raise ProblemError(f"problem file {path} does not define {', '.join(sorted(missing))}")
    try:
        meta = _literal_assignments(tree)
    except (ValueError, TypeError) as e:
        raise ProblemError(f"problem file {path}: extension constants must be literals: {e}") from e
    task = meta.get("TASK", "forward")
    if task not in ("forward", "backward"):
        raise ProblemError(f"problem file {path}: TASK must be 'forward' or 'backward', not {task!r}")
    for key in ("VARIANTS", "SMALL_VARIANTS"):
        value = meta.get(key, [])
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, dict) for v in value):
            raise ProblemError(f"problem file {path}: {key} must be a list of dicts")
    if not isinstance(meta.get("SMALL", {}), dict):
        raise ProblemError(f"problem file {path}: SMALL must be a dict")
    if not isinstance(meta.get("DERIVE_VARIANTS", True), bool):
        raise ProblemError(f"problem file {path}: DERIVE_VARIANTS must be True or False")
    sizes = meta.get("SIZE_CONSTANTS")
    if sizes is not None and (not isinstance(sizes, (list, tuple)) or not all(isinstance(n, str) for n in sizes)):
        raise ProblemError(f"problem file {path}: SIZE_CONSTANTS must be a list of constant names")
    m = _NAME_RE.match(path.stem)
    number, name = (int(m.group(1)), m.group(2)) if m else (None, path.stem)
    return Problem(
        path=path.resolve(),
        source=source,
        level=level or path.parent.name,
        number=number,
        name=name,
        tags=tuple(str(t) for t in meta.get("TAGS", [])),
        task=task,
        variants=tuple(meta.get("VARIANTS", [])),
        small=dict(meta.get("SMALL", {})),
        small_variants=tuple(meta.get("SMALL_VARIANTS", [])),
        derive_variants=meta.get("DERIVE_VARIANTS", True),
        size_constants=tuple(sizes) if sizes is not None else None,
    )


def instantiate(problem: Problem, overrides: dict | None = None) -> dict[str, Any]:
    """Execute the problem file in a fresh namespace with ``overrides`` applied to its constants."""
    namespace: dict[str, Any] = {"__name__": f"kbench_problem_{problem.sha}", "__file__": str(problem.path)}
    try:
        exec(compile(problem.source, str(problem.path), "exec"), namespace)
    except Exception as e:  # the benchmark file is broken: say so clearly
        raise ProblemError(f"problem {problem.key} failed to execute: {type(e).__name__}: {e}") from e
    for key, value in (overrides or {}).items():
        if key not in namespace:
            raise ProblemError(f"problem {problem.key}: override {key!r} names no module constant")
        namespace[key] = value
    return namespace


def _sort_key(path: Path):
    m = _NAME_RE.match(path.stem)
    return (int(m.group(1)) if m else 10**9, path.stem)


def discover(root: str | Path) -> list[Problem]:
    """All problems under ``root``: a single file, a folder of problem files, or a folder of
    levels (``level1/``, ``level2/``, ...; upstream KernelBench's layout works unchanged).

    Files that fail to parse are returned as errors by :func:`discover_with_errors`; this
    function raises on the first one.
    """
    problems, errors = discover_with_errors(root)
    if errors:
        path, err = errors[0]
        raise ProblemError(str(err))
    return problems


def discover_with_errors(root: str | Path) -> tuple[list[Problem], list[tuple[Path, ProblemError]]]:
    root = Path(root)
    if root.is_file():
        files = [root]
    else:
        files = []
        for folder in sorted({p.parent for p in root.rglob("*.py")}):
            if "solutions" in folder.relative_to(root).parts or folder.name.startswith((".", "_")):
                continue
            files.extend(sorted((p for p in folder.glob("*.py") if not p.name.startswith("_")), key=_sort_key))
    problems, errors = [], []
    for f in files:
        try:
            problems.append(load_problem(f))
        except ProblemError as e:
            errors.append((f, e))
    return problems, errors


def find_problem(root: str | Path, key: str) -> Problem:
    """Look a problem up by ``level/stem``, by stem, or by path."""
    p = Path(key)
    if p.suffix == ".py" and p.exists():
        return load_problem(p)
    for prob in discover_with_errors(root)[0]:
        if key in (prob.key, prob.path.stem, f"{prob.level}/{prob.number}"):
            return prob
    raise ProblemError(f"no problem {key!r} under {root}")


def select(problems: list[Problem], filters=None, limit: int | None = None) -> list[Problem]:
    """The problems whose key contains any of ``filters`` (all without filters), the first ``limit`` of them."""
    if filters:
        problems = [p for p in problems if any(f in p.key for f in filters)]
    return problems[:limit] if limit else problems


def resolve(name: str, root: str | Path) -> Problem:
    """The problem ``name`` names: a ``.py`` file, else a key under ``root`` (``level1/51_ReLU``, a
    stem, or ``level1/51``); :class:`ProblemError` with a one-line message otherwise."""
    path = Path(name).expanduser()
    if path.suffix == ".py":
        return load_problem(path)
    return find_problem(root, name)

