"""Derived variants: other shapes for problems that declare fewer than two for the size in use.

A kernel that hard-codes the tested size (no masks, a row length baked in) passes a benchmark
that checks one shape (threat #7). Where a problem declares fewer than two ``VARIANTS`` (full
size) or ``SMALL_VARIANTS`` (``SMALL`` size), two more configurations are derived here from the
file's module-level size constants and validated by running the reference.

Which constants are sizes (the rule, in order):

1. ``DERIVE_VARIANTS = False`` in the file: nothing is derived.
2. ``SIZE_CONSTANTS = ["batch_size", "dim"]`` in the file: exactly those constants.
3. Otherwise a module-level integer constant (or tuple of integers, as upstream's
   ``input_shape = (4096,)``) is a size when its name appears in the *shape* of a
   tensor that ``get_inputs`` creates (the size arguments of ``torch.randn``, ``rand``, ``zeros``,
   ``ones``, ``empty``, ``full``, ``randint``'s size tuple, ``arange``, ..., a tuple handed to
   any other call such as ``Pareto(...).sample((B, *shape))``, also through local variables of
   ``get_inputs``) and its name does not say it is a window or a layout parameter
   (kernel, stride, padding, dilation, groups, heads, window). Besides those input sizes, an
   integer constant that does not shape an input but is named as an output width
   (``OUT_CHANNELS``, ``out_features``, ``OUTPUT_DIM``, ``HIDDEN``, ``hidden_size``) is a size
   too. Every other constant (kernel sizes, strides, reduction dims, num_classes, vocabulary
   sizes, layer counts, eps) is left alone; floats and bools are never sizes. A constant counts
   however it is assigned: alone, together (``rows, cols = 8192, 8192``), in a chain
   (``H = W = 64``) or with an annotation (``N: int = 128``).

Derivation (deterministic: same file and size -> same variants): two patterns of factors,
(0.75, 0.5, 0.75, ...) and (0.5, 0.75, 0.5, ...), are cycled over the size constants in file
order, so the shapes shrink by different amounts per dimension (another aspect ratio); each
scaled value is rounded down to an odd number (odd numbers above 1 are never powers of two) of at
least 3; a value that cannot shrink that way (1, 2, 3) is kept. Every derived size is at most its
base, so a variant never needs more memory or time than the configuration it came from (an
8192 x 8192 problem's variants fit where it fits). When a pattern fails validation (a model whose
layers fix a spatial size, a width that must divide by the number of heads or groups), the
patterns are tried on the input sizes alone (output widths kept); then with each size rounded
down to a multiple of the other integer constants that divide it (the number of heads or groups),
not a power of two, though then not odd; then on one input size at a time; at most
:data:`MAX_TRIES` candidates in all, until two pass.

Validation runs each candidate through :func:`kbench_lib.suite.lint.check_config` (runs, finite,
deterministic, not degenerate, well conditioned, sized) on the device the judgement uses; a
candidate that fails is dropped with a note saying why. Results are cached in memory per (problem
source, size, device) and on disk under the build cache root (``$KBENCH_CACHE/variants``), so a
judge validates a problem once, not once per candidate.
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import problems as _problems
from .problems import EXTENSION_NAMES, Config, Problem

VERSION = 2  # bump when the rule or the patterns change: cached derivations are then ignored
PATTERNS = ((0.75, 0.5), (0.5, 0.75))
MIN_SIZE = 3
N_DERIVED = 2
MAX_TRIES = 10

TENSOR_MAKERS = {
    "randn", "rand", "zeros", "ones", "empty", "full", "randint", "randperm", "arange",
    "linspace", "logspace", "eye", "normal", "tril_indices", "triu_indices",
}
NOT_SIZE_NAME = re.compile(r"kernel|stride|pad|dilation|groups?$|heads$|window|^ks$", re.IGNORECASE)
OUTPUT_WIDTH_NAME = re.compile(r"^(out|output)_?(channels|features|dim|size)$|^hidden(_?(size|dim))?$", re.IGNORECASE)


@dataclass
class Derivation:
    """The derived configurations of one problem at one size, and what was tried and dropped."""

    size_constants: list = field(default_factory=list)
    configs: list = field(default_factory=list)  # Config(derived=True), validated
    notes: list = field(default_factory=list)  # why a candidate was dropped, or why none was derived
    infos: list = field(default_factory=list)  # lint's measurements of each kept configuration


# ----- which constants are sizes (pure: reads the file's syntax tree, executes nothing)

def shape_constants(tree: ast.Module) -> dict[str, int | tuple | list]:
    """Module-level integer constants and tuples or lists of integers (upstream's
    ``input_shape = (4096,)``), in file order: also those assigned together
    (``rows, cols = 8192, 8192``), in a chain (``a = b = 64``) or with an annotation
    (``N: int = 128``)."""
    found: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        else:
            continue
        for target in targets:
            for name, value in _bound(target, node.value):
                if name not in EXTENSION_NAMES and _is_shape(value):
                    found[name] = value
    return found


def _bound(target: ast.AST, value: ast.AST) -> list[tuple[str, object]]:
    """(name, literal value) for each name that assigning ``value`` to ``target`` binds; a name
    whose value is not a literal, or an unpacking that is not element by element, binds none."""
    if isinstance(target, (ast.Tuple, ast.List)):
        if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != len(target.elts) \
                or any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts)):
            return []
        return [b for t, v in zip(target.elts, value.elts) for b in _bound(t, v)]
    if not isinstance(target, ast.Name):
        return []
    try:
        return [(target.id, ast.literal_eval(value))]
    except (ValueError, TypeError):
        return []


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_shape(v) -> bool:
    return _is_int(v) or (isinstance(v, (tuple, list)) and len(v) > 0 and all(_is_int(e) for e in v))


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _maker_name(call: ast.Call) -> str | None:
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "torch":
        return f.attr
    return None


def _shape_args(call: ast.Call, maker: str) -> list[ast.AST]:
    """The arguments of a tensor-making call that give its shape (not its values)."""
    sized = [kw.value for kw in call.keywords if kw.arg in ("size", "n", "steps", "row", "col", "end")]
    if maker in ("randint", "normal"):  # randint(low, high, size), normal(mean, std, size): only the size
        return sized + [a for a in call.args if isinstance(a, (ast.Tuple, ast.List))]
    if maker == "full":  # full(size, fill_value)
        return sized + call.args[:1]
    return sized + list(call.args)


def _names(nodes) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def shape_names(tree: ast.Module) -> set[str]:
    """Names that reach a tensor's shape in ``get_inputs`` (directly or through its local variables)."""
    fn = _function(tree, "get_inputs")
    if fn is None:
        return set()
    used: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and (maker := _maker_name(node)) in TENSOR_MAKERS:
            used |= _names(_shape_args(node, maker))
        elif isinstance(node, ast.Call):  # a shape tuple handed to any other sampler: dist.sample((B, *shape))
            used |= _names([a for a in node.args if isinstance(a, (ast.Tuple, ast.List))])
    local = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        local.setdefault(n.id, set()).update(_names([node.value]))
    changed = True
    while changed:  # a local that reaches a shape makes the names it was computed from reach it too
        changed = False
        for name in list(used):
            new = local.get(name, set()) - used
            if new:
                used |= new
                changed = True
    return used


def size_constants(problem: Problem, tree: ast.Module | None = None) -> tuple[list[str], list[str], list[str]]:
    """(size constants in file order, the subset that shapes the inputs, notes): the rule in the
    module docstring."""
    tree = tree or ast.parse(problem.source)
    ints = shape_constants(tree)
    if problem.size_constants is not None:
        unknown = [n for n in problem.size_constants if n not in ints]
        notes = [f"SIZE_CONSTANTS names {', '.join(unknown)}: not module-level integers or tuples of integers"] if unknown else []
        named = [n for n in ints if n in problem.size_constants]
        return named, named, notes
    reach = shape_names(tree)
    inputs = [n for n in ints if n in reach and not NOT_SIZE_NAME.search(n)]
    widths = [n for n in ints if n not in reach and _is_int(ints[n]) and OUTPUT_WIDTH_NAME.search(n)]
    return [n for n in ints if n in inputs or n in widths], inputs, []


# ----- candidates (pure)

def shrink(value: int, factor: float) -> int:
    """``value * factor`` rounded down to an odd number >= MIN_SIZE; ``value`` if that is not smaller."""
    t = max(int(value * factor), MIN_SIZE)
    if t % 2 == 0:
        t -= 1
    return t if MIN_SIZE <= t < value else value


def shrink_multiple(value: int, factor: float, m: int) -> int:
    """``value * factor`` rounded down to a multiple of ``m`` that is not a power of two; ``value``
    if there is none smaller (for sizes that must divide by a count of heads or groups)."""
    t = int(value * factor) // m * m
    while t >= m and t & (t - 1) == 0:
        t -= m
    return t if max(m, MIN_SIZE) <= t < value else value


def divisor(name: str, base: dict, sizes: list[str]) -> int:
    """The least common multiple of the non-size integer constants (>= 2) that divide ``name``'s
    value: the structure a derived value keeps in the fallback (heads, groups, windows)."""
    m = 1
    if not _is_int(base[name]):
        return m
    for other, v in base.items():
        if other not in sizes and _is_int(v) and v >= 2 and base[name] % v == 0:
            m = math.lcm(m, v)
    return m


def base_values(problem: Problem, small: bool, tree: ast.Module | None = None) -> dict:
    values = shape_constants(tree or ast.parse(problem.source))
    if small:
        values.update({k: v for k, v in problem.small.items() if _is_shape(v)})
    return values


def _scaled(base: dict, names: list[str], pattern: tuple, one) -> dict:
    """Each size in ``names`` scaled by the next factor of ``pattern`` (cycled over the sizes and
    over the elements of tuple-valued sizes), through ``one(name, value, factor)``."""
    out, k = {}, 0
    for n in names:
        values = [base[n]] if _is_int(base[n]) else list(base[n])
        scaled = []
        for v in values:
            scaled.append(one(n, v, pattern[k % len(pattern)]))
            k += 1
        out[n] = scaled[0] if _is_int(base[n]) else type(base[n])(scaled)
    return out


def candidates(problem: Problem, small: bool) -> tuple[list[str], list[dict], list[str]]:
    """(size constants, candidate overrides in the order they are tried, notes)."""
    tree = ast.parse(problem.source)
    sizes, inputs, notes = size_constants(problem, tree)
    base = base_values(problem, small, tree)
    prefix = dict(problem.small) if small else {}
    out: list[dict] = []

    def add(scaled: dict) -> None:
        changed = {k: v for k, v in scaled.items() if v != base[k]}
        cand = {**prefix, **changed}
        if changed and cand not in out:
            out.append(cand)

    def odd(n, v, f):
        return shrink(v, f)

    m = {n: divisor(n, base, sizes) for n in sizes}

    def keep_divisible(n, v, f):
        return shrink_multiple(v, f, m[n]) if m[n] > 1 else shrink(v, f)

    for group in (sizes, inputs):  # every size; then the input shapes alone (output widths kept)
        for pattern in PATTERNS:
            add(_scaled(base, group, pattern, odd))
    if any(v > 1 for v in m.values()):  # sizes that must stay divisible by a count of heads or groups
        for pattern in PATTERNS:
            add(_scaled(base, sizes, pattern, keep_divisible))
    for n in inputs:  # fallbacks: one input size at a time
        for pattern in PATTERNS:
            add(_scaled(base, [n], pattern, odd))
    return sizes, out[:MAX_TRIES], notes


# ----- validation (runs the reference) and caching

_MEMORY: dict[tuple, Derivation] = {}


def _cache_file(problem: Problem, small: bool, device: str) -> Path:
    import torch

    from ..core.paths import cache_root
    from ..core.provenance import device_name

    key = f"{problem.sha}|{small}|{device_name(device)}|{torch.__version__}|{VERSION}"
    return cache_root() / "variants" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


def _default_device(small: bool) -> str:
    import torch

    return "cuda" if not small and torch.cuda.is_available() else "cpu"


def derive(problem: Problem, small: bool, device: str | None = None, fresh: bool = False) -> Derivation:
    """The validated derived variants of ``problem`` at this size, on ``device`` (default: the CPU
    for SMALL, the GPU when there is one for full size). Cached; deterministic. ``fresh``
    validates again and replaces the cached result (lint does, so its verdict is never stale)."""
    device = device or _default_device(small)
    key = (problem.sha, problem.key, small, device)
    if key in _MEMORY and not fresh:
        return _MEMORY[key]
    path = _cache_file(problem, small, device)
    try:
        if fresh:
            raise FileNotFoundError(path)
        d = _from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError, SyntaxError):  # none yet, or unreadable: validate
        d = _validate(problem, small, device)
        _write(path, d)
    _MEMORY[key] = d
    return d


def _validate(problem: Problem, small: bool, device: str) -> Derivation:
    from .problem_checks import LintReport, check_config

    sizes, tried, notes = candidates(problem, small)
    d = Derivation(size_constants=sizes, notes=notes)
    prefix = "small_derived" if small else "derived"
    for overrides in tried:
        if len(d.configs) == N_DERIVED:
            break
        cfg = Config(f"{prefix}{len(d.configs)}", overrides, derived=True)
        report = LintReport(problem.key)
        check_config(problem, cfg, device, report, check_size=True)
        if report.ok:
            d.configs.append(cfg)
            d.infos.extend(report.configs)
        else:
            why = "; ".join(f"{i.check}: {i.reason}" for i in report.issues)
            d.notes.append(f"derived variant {_show(overrides, problem.small if small else {})} dropped: {why}"[:600])
    if len(d.configs) < N_DERIVED:
        what = "no size constants found" if not sizes else f"size constants {', '.join(sizes)}"
        d.notes.append(f"only {len(d.configs)} of {N_DERIVED} variants could be derived ({what}; "
                       "name them with SIZE_CONSTANTS, declare VARIANTS, or opt out with DERIVE_VARIANTS = False)")
    return d


def _show(overrides: dict, prefix: dict) -> str:
    return "dict(" + ", ".join(f"{k}={v}" for k, v in overrides.items() if prefix.get(k) != v) + ")"


def _write(path: Path, d: Derivation) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(_to_json(d), default=str))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs a re-validation next time


def _to_json(d: Derivation) -> dict:
    # overrides as Python literals: JSON would turn a tuple-valued size into a list
    return {**asdict(d), "configs": [{"name": c.name, "overrides": repr(c.overrides)} for c in d.configs]}


def _from_json(data: dict) -> Derivation:
    configs = [Config(c["name"], dict(ast.literal_eval(c["overrides"])), derived=True) for c in data["configs"]]
    return Derivation(list(data["size_constants"]), configs, list(data["notes"]), list(data["infos"]))


def derived_configs(problem: Problem, small: bool, device: str | None = None) -> list[Config]:
    """The derived configurations :meth:`kbench_lib.suite.problems.Problem.configs` appends to the
    declared ones: none where the problem declares enough variants for this size."""
    if needs_derivation(problem, small):
        return derive(problem, small, device).configs
    return []


_problems._DERIVED_CONFIGS = derived_configs


def needs_derivation(problem: Problem, small: bool) -> bool:
    declared = problem.small_variants if small else problem.variants
    return problem.derive_variants and len(declared) < N_DERIVED


def split(problem: Problem, small: bool, device: str | None = None) -> tuple[list[str], list[str], list[str]]:
    """(declared variant names, derived variant names, notes) of a judgement at this size."""
    configs = problem.configs(small=small, device=device)[1:]
    notes = derive(problem, small, device).notes if needs_derivation(problem, small) else []
    return [c.name for c in configs if not c.derived], [c.name for c in configs if c.derived], list(notes)
