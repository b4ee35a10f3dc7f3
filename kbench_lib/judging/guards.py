"""Cheat checks that add reasons to a verdict's ``flags`` (docs/THREAT_MODEL.md).

Runtime checks (what the candidate did) live with the code that observes it: the worker (output
types and aliasing, timer integrity, threads left running, unjoined streams) and the judge
(outputs, inputs after the call, timed-output re-checks). This module holds the static checks on
the source, parsed with ``ast``, and the checks on a finished verdict. A :class:`Policy` says which
checks are on; a flagged result never counts as a speedup.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..core import dsl_source
from ..core.candidates import KERNEL_BACKENDS

# modules whose use in a kernel candidate has no legitimate purpose here
SUSPECT_MODULES = {
    "gc": "introspects live objects (harness tampering)",
    "inspect": "introspects frames and callers (harness tampering)",
    "ctypes": "raw memory and native calls",
    "socket": "network access",
    "urllib": "network access",
    "requests": "network access",
    "http": "network access",
    "subprocess": "starts processes",
    "multiprocessing": "starts processes",
    "threading": "background threads",
    "concurrent": "background threads",
    "signal": "signal handlers",
    "pickle": "arbitrary deserialisation",
    "importlib": "loads modules by name",
    "_thread": "background threads",
    "mmap": "shared memory with other processes",
    "sysconfig": "interpreter internals",
}
PATCHABLE_ROOTS = {"torch", "time", "F", "nn", "np", "numpy", "os", "sys", "builtins", "triton", "math", "cutlass", "tilelang"}
SUSPECT_ATTRS = {
    "_getframe": "reads the caller's frames",
    "f_back": "reads the caller's frames",
    "f_locals": "reads the caller's frames",
    "f_globals": "reads the caller's frames",
    "__subclasses__": "walks the class hierarchy",
    "get_objects": "walks live objects",
    "get_referrers": "walks live objects",
    "_exit": "exits the process without cleanup",
    "fork": "starts processes",
    "forkpty": "starts processes",
    "posix_spawn": "starts processes",
    "system": "runs shell commands",
    "popen": "runs shell commands",
    "__globals__": "reaches a function's module",
    "__code__": "rewrites functions",
    "__defaults__": "rewrites functions",
    "__closure__": "reads closures",
    "__builtins__": "reaches builtins",
    "_profiler_enabled": "detects the profiler",
    "get_ident": "inspects threads",
    "settrace": "traces the judge",
    "setprofile": "traces the judge",
}
SUSPECT_CALLS = {"set_float32_matmul_precision", "use_deterministic_algorithms", "set_flush_denormal", "set_default_dtype"}
# the process environment: reading or writing it is a hazard to a caller (its secrets, its settings
# of other libraries), not an attack on the judge (the sandbox scrubs what the candidate sees)
ENVIRONMENT_ATTRS = {"environ", "environb"}
# library attributes that are process-wide settings rather than code: a module's attribute under
# each prefix (``torch.backends.cudnn.benchmark``, ``torch._inductor.config.x``; the modules
# themselves, ``torch.backends.cudnn``, are code). Assigning one changes how torch runs (cudnn
# autotuning, TF32, the compilers' options), which the judge owns and resets before every
# measurement; assigning any other library attribute replaces a function, a class or a timer
# (patches_library)
SETTINGS_PREFIXES = ("torch.backends.", "torch._inductor.config.", "torch._dynamo.config.")


@dataclass
class Policy:
    """Which checks run. All on by default (strict)."""

    static: bool = True
    custom_kernel_required: bool = True  # cuda/cpp/triton/cute/tilelang candidates must define or load a kernel
    speed_of_light: bool = True
    sol_margin: float = 0.9  # flag a time below margin * sol_ms (roofline estimates are not exact)
    min_custom_share: float = 0.01  # GPU: own kernels under this share of device time did no real work
    disabled: set = field(default_factory=set)  # individual flag names to ignore

    def on(self, name: str) -> bool:
        return name not in self.disabled


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _resolved(node: ast.AST, aliases: dict) -> str:
    """The dotted path of ``node`` with its root name replaced by what an alias names
    (``cudnn.benchmark`` after ``cudnn = torch.backends.cudnn``: ``torch.backends.cudnn.benchmark``)."""
    path = _dotted(node)
    root = path.split(".", 1)[0]
    return aliases[root] + path[len(root):] if root in aliases else path


def _is_setting(path: str, value: ast.AST | None, defined: set) -> bool:
    """Whether assigning ``value`` to ``path`` sets a process-wide setting (:data:`SETTINGS_PREFIXES`)
    rather than replacing code: not a dunder, not a function (a lambda, or a function or class the
    source defines: a hook or a replaced method is a patch wherever it is assigned), not a deletion
    (``value`` None)."""
    if value is None or path.rsplit(".", 1)[-1].startswith("__"):
        return False
    under = next((path[len(p):] for p in SETTINGS_PREFIXES if path.startswith(p)), "")
    if not under or (path.startswith("torch.backends.") and "." not in under):
        return False
    if isinstance(value, ast.Lambda) or (isinstance(value, ast.Name) and value.id in defined):
        return False
    return True


def _has_custom_kernel(tree: ast.AST, backend: str) -> bool:
    """Whether the source defines or loads a kernel: a JIT extension build (any backend), a
    ``@triton.jit`` function (triton), a kernel of the candidate's DSL (cute, tilelang:
    :func:`kbench_lib.core.dsl_source.defines_kernel`; calling torch from a DSL's host code is not one)."""
    if backend in dsl_source.KERNEL_WORDS and dsl_source.defines_kernel(tree, backend):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name == "load_inline" or (name == "load" and any(k.arg == "sources" for k in node.keywords)):
                return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and backend == "triton":
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                if _dotted(target) in ("triton.jit", "triton.autotune", "jit"):
                    return True
    return False


def _library_aliases(tree: ast.AST) -> dict[str, str]:
    """Names the source binds to library objects (``T = torch.Tensor``, ``from torch.backends import
    cudnn``, ``import torch.nn.functional as F``) -> the dotted path each stands for, so that patching
    through an alias shows too."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Attribute, ast.Name)) and _root_name(node.value) in PATCHABLE_ROOTS:
            for t in node.targets:
                if isinstance(t, ast.Name):
                    aliases[t.id] = _dotted(node.value)
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in PATCHABLE_ROOTS:
            # ``from torch.backends import cudnn``: the name bound is the library's object
            for a in node.names:
                if a.name != "*" and (a.asname or a.name) not in PATCHABLE_ROOTS:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if a.asname and a.name.split(".")[0] in PATCHABLE_ROOTS and a.asname not in PATCHABLE_ROOTS:
                    aliases[a.asname] = a.name
    return aliases


def static_flags(source: str, backend: str, policy: Policy | None = None) -> list[str]:
    """Reasons to distrust a candidate found in its source (no execution)."""
    policy = policy or Policy()
    if not policy.static:
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # the load stage reports it as a load_error
    flags: list[str] = []

    def add(name: str, why: str):
        text = f"{name}: {why}"
        if policy.on(name) and text not in flags:
            flags.append(text)

    aliases = _library_aliases(tree)
    # names of the functions and classes the source defines (a value that replaces library code)
    defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for n in names:
                top = n.split(".")[0]
                if top in SUSPECT_MODULES:
                    add("suspect_import", f"imports {n} ({SUSPECT_MODULES[top]})")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            value = None if isinstance(node, ast.Delete) else node.value
            for t in targets:
                root = _root_name(t) if isinstance(t, ast.Attribute) else None
                if root not in PATCHABLE_ROOTS and root not in aliases:
                    continue
                if _is_setting(_resolved(t, aliases), value, defined):
                    add("changes_settings", f"assigns to {_resolved(t, aliases)} (a process-wide setting the judge owns and resets)")
                elif root in PATCHABLE_ROOTS:
                    add("patches_library", f"assigns to {_dotted(t)} (monkey-patching a library function, class or timer)")
                else:
                    add("patches_library", f"assigns to {_dotted(t)}, an alias of {aliases[root]}")
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in ("setattr", "delattr") and node.args and (
                    _root_name(node.args[0]) in PATCHABLE_ROOTS or _root_name(node.args[0]) in aliases):
                key = node.args[1] if len(node.args) >= 2 else None
                value = node.args[2] if f.id == "setattr" and len(node.args) >= 3 else None
                path = f"{_resolved(node.args[0], aliases)}.{key.value}" if isinstance(key, ast.Constant) and isinstance(key.value, str) else ""
                if path and _is_setting(path, value, defined):
                    add("changes_settings", f"setattr on {path} (a process-wide setting the judge owns and resets)")
                else:
                    add("patches_library", f"{f.id} on {_dotted(node.args[0]) or 'a library object'}")
            # a name a library import bound (``from cutlass.cute import compile``) is that library's, not the builtin
            if isinstance(f, ast.Name) and f.id in ("exec", "eval", "compile", "__import__") and f.id not in aliases:
                add("dynamic_code", f"calls {f.id}() (code the judge cannot read)")
            if isinstance(f, ast.Name) and f.id in ("globals", "vars", "locals"):
                add("introspection", f"calls {f.id}()")
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in SUSPECT_CALLS:
                add("changes_settings", f"calls {name}() (global numerics the judge owns)")
            if isinstance(f, ast.Name) and f.id in ("getattr", "setattr", "delattr", "hasattr") and len(node.args) >= 2:
                key = node.args[1]
                if isinstance(key, ast.Constant) and key.value in ENVIRONMENT_ATTRS:
                    add("environment_access", f"{f.id}(..., {key.value!r}) (reads or writes the process environment)")
                elif isinstance(key, ast.Constant) and isinstance(key.value, str) and (key.value in SUSPECT_ATTRS or key.value.startswith("__")):
                    add("introspection", f"{f.id}(..., {key.value!r}) ({SUSPECT_ATTRS.get(key.value, 'dunder access')})")
        elif isinstance(node, ast.Attribute) and node.attr == "modules" and _dotted(node) == "sys.modules":
            add("introspection", "uses sys.modules (reaches other modules' internals)")
        elif isinstance(node, ast.Attribute) and node.attr in ENVIRONMENT_ATTRS:
            add("environment_access", f"uses {_dotted(node) or '.' + node.attr} (reads or writes the process environment)")
        elif isinstance(node, ast.Attribute) and node.attr in SUSPECT_ATTRS:
            add("introspection", f"uses .{node.attr} ({SUSPECT_ATTRS[node.attr]})")
    if policy.custom_kernel_required and backend in KERNEL_BACKENDS and not _has_custom_kernel(tree, backend):
        add("no_custom_kernel", f"a {backend} candidate that {dsl_source.KERNEL_WORDS.get(backend, 'neither defines nor loads a kernel')}")
    return flags


UNTIMED_RATIO = 4.0  # device busy this many times the timed median (plus the margin) is work the clock missed
UNTIMED_MARGIN_MS = 0.02


def _untimed_device_work(verdict) -> str | None:
    """The second check of threat #11, independent of host wake-ups: the device-busy clock's
    profiled calls end in a device-wide sync, so every kernel a call launched, on any stream, is
    counted there (overlaps once); the timed clock sees only what the current stream waited for.
    Honest candidates stay at or under their timed median (the highest ratio of the summed clock,
    which counts overlaps twice, over 1,749 recorded CUDA verdicts and baselines was 2.5, cuDNN's
    multi-layer GRU); a call that leaves its kernel on an unjoined stream is timed at its launch,
    tens of times less. The gap check alone can miss such a cheat (the adversarial g11b: timed
    0.0019 ms, its kernel about 0.07 ms), leaving it to the memoisation and roofline checks.

    The timed side is the lower of the reported median and ``stream_ms``, the calling stream's own
    start -> end with no correction for unjoined calls: a call the gap check counted as unjoined
    is reported to the device-wide sync (no gain to the cheat), but its stream still shows the
    launch alone. The gap check depends on host wake-ups (a re-check whose freshly measured floor
    exceeds the side kernel's time counts none of its calls, even where the timed run counted
    nearly all); this comparison does not."""
    stats = getattr(verdict, "runtime_stats", None) or {}
    busy, timed = stats.get("device_union_ms"), verdict.runtime_ms
    stream = stats.get("stream_ms")
    if timed and stream and 0 < stream < timed:
        timed = stream
    if not (busy and timed) or busy <= UNTIMED_RATIO * timed + UNTIMED_MARGIN_MS:
        return None
    return (f"side_stream_unjoined: the device was busy {busy:.4g} ms per profiled call on all its streams, "
            f"{busy / timed:.1f}x the {timed:.4g} ms the calling stream waited for: work ran outside the timed window")


def runtime_flags(verdict, problem, policy: Policy | None = None) -> list[str]:
    """Checks on a finished verdict whose declared shape is correct under some protocol (it was timed)."""
    policy = policy or Policy()
    flags: list[str] = []
    if (
        policy.speed_of_light and policy.on("faster_than_light") and verdict.runtime_ms and verdict.sol_ms
        and verdict.runtime_ms < policy.sol_margin * verdict.sol_ms
    ):
        flags.append(
            f"faster_than_light: {verdict.runtime_ms:.4g} ms is below the roofline bound {verdict.sol_ms:.4g} ms for this problem"
        )
    untimed = _untimed_device_work(verdict)
    if untimed and policy.on("side_stream_unjoined") and not any(str(f).startswith("side_stream_unjoined") for f in getattr(verdict, "flags", [])):
        flags.append(untimed)
    if policy.speed_of_light and policy.on("faster_than_light"):  # --time-variants: each variant against its own bound
        for name, t in (verdict.variant_timings or {}).items():
            ms, sol = t.get("runtime_ms"), t.get("sol_ms")
            if ms and sol and ms < policy.sol_margin * sol:
                flags.append(f"faster_than_light: {ms:.4g} ms is below the roofline bound {sol:.4g} ms of variant {name}")
    return flags
