"""The judge's input sets, drawn in this process with the judge's own functions and seeds.

Every checked set is drawn before the candidate exists (:func:`_draw_cases`). A timed set is drawn
just before its first timed call (:class:`_TimedDraws`), and each such draw first checks that
nothing it runs through was replaced or hooked since the candidate was imported
(:func:`_drawing_state`, :func:`_drawing_tampered`). The drawing functions and the check live in
this one module: the check reads this module's own bindings (``globals()``), the ones the draws use.
"""
from __future__ import annotations

import builtins
import gc
import inspect
import os
import signal
import sys

import torch
import torch.utils._device  # the device context that routes factories (checked around each timed draw)

from ...measure.compare import fingerprint as _fingerprint
from ...measure.tensors import require_grad, to_device
from ...suite.problems import Config, instantiate, load_problem, model_name
from ...suite.reference import draw_inputs, reference_state, state_fingerprint, upstream_grads

_Tensor = torch.Tensor
_empty_like = torch.empty_like
_urandom = os.urandom


def _draw_cases(job: dict, device: torch.device) -> list[dict]:
    """Every case's init inputs and reference state (one per configuration and init seed), drawn
    with the judge's own functions, with their fingerprints; the inputs of every checked case, on
    the device. A timed case's inputs are not drawn here but by :class:`_TimedDraws`, just before
    the first timed call on them: inputs that exist before the candidate runs can be found by it
    (``gc``, the allocator's blocks) and their answers computed ahead, off the clock."""
    problem = load_problem(job["problem_path"], job.get("problem_level"))
    precision, dev = job["precision"], str(device)
    states: dict = {}
    out = []
    recorded: set = set()
    ops: set = set()
    for m in job["cases"]:
        cfg = Config(m["config"], m.get("overrides") or {})
        key = (model_name(m["config"]), m["init_seed"])  # an eval configuration's state is its training configuration's
        if key not in states:
            init_inputs, state = reference_state(problem, cfg, m["init_seed"], precision)
            states[key] = (init_inputs, state, state_fingerprint(state))
        init_inputs, state, sums = states[key]
        case = {"config": m["config"], "init_seed": m["init_seed"], "init_inputs": init_inputs, "state_dict": state,
                "state_sums": sums, "inputs": None, "grad_output": None, "fingerprints": None,
                # a fresh namespace of the problem file per case, as the judge's make_inputs makes it
                "namespace": instantiate(problem, cfg.overrides)}
        if not m.get("timed"):
            if m["config"] in recorded:
                _draw_inputs(case, m, job, dev)
            else:  # the first checked set of a configuration: which operators a draw dispatches to
                recorded.add(m["config"])
                ops.update(_recording_ops(lambda: _draw_inputs(case, m, job, dev), case))
        out.append(case)
    global _DRAW_OPS
    _DRAW_OPS = frozenset(ops)
    return out


# operators a timed draw may dispatch to, beside those a checked draw of the same problem was seen to
# use: a kernel registered over one of them (torch.library, "aten" IMPL) sees every tensor it makes
_FACTORY_OPS = ("randn", "rand", "randint", "randn_like", "rand_like", "randint_like", "randperm", "normal_", "uniform_",
                "random_", "bernoulli_", "exponential_", "normal", "bernoulli", "multinomial", "empty.memory_format",
                "empty_like", "empty_strided", "_to_copy", "copy_", "to", "fill_", "zeros", "ones", "full", "arange",
                "linspace", "clone", "cat", "stack", "contiguous", "sum", "requires_grad_")
_DRAW_OPS: frozenset = frozenset()  # the operators checked around each timed draw (set once, before the import)


def _recording_ops(draw, case: dict) -> set[str]:
    """The aten operators ``draw()`` dispatches to (recorded under a dispatch mode, before the
    candidate exists), and the fixed factory list; the draw is made again plainly (same seed, same
    data) if the mode could not record it."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: set[str] = set()

    class _Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(func.name())  # with its overload ("aten::mul.Tensor"): the table that dispatches it
            return func(*args, **(kwargs or {}))

    namespace = dict(case["namespace"])  # the draw pops it; a plain redraw needs it again
    try:
        with _Record():
            draw()
    except Exception:  # noqa: BLE001 - an operator the mode cannot pass through: the fixed list only
        case["namespace"] = namespace
        draw()
        seen = set()
    return seen | _factory_overloads()


def _factory_overloads() -> set[str]:
    """Every overload of the fixed factory operators, by the name their dispatch table has."""
    names = set()
    for op in _FACTORY_OPS:
        base = op.split(".")[0]
        packet = getattr(torch.ops.aten, base, None)
        for overload in (packet.overloads() if packet is not None else []):
            names.add(f"aten::{base}" if overload == "default" else f"aten::{base}.{overload}")
    return names


def _draw_inputs(case: dict, meta: dict, job: dict, dev: str) -> None:
    """Draws one case's inputs (and upstream gradients) into ``case``, with their fingerprints."""
    ns = case.pop("namespace")
    inputs = draw_inputs(ns, meta["input_seed"], job["precision"], dev)
    case["inputs"] = inputs
    case["grad_output"] = upstream_grads(meta["grad_output"], meta["input_seed"], dev) if meta.get("grad_output") else None
    case["fingerprints"] = [_fingerprint(t)["sums"] if isinstance(t, _Tensor) else None for t in inputs]


# what drawing a timed set relies on once the candidate has run: every callable of torch's
# namespaces and of any module a problem file holds (numpy, math, ...), the Tensor class and the
# device context that routes factories to the device (threat #14: patched, any of them could
# compute the answers of the sets they draw, off the clock)
_DRAWING_MODULES = (torch, torch.nn.functional, torch.nn.init, torch.random, torch.cuda, torch.linalg, torch.special,
                    torch.fft, torch.distributions)
_DRAWING_CLASSES = (torch.Tensor, torch.utils._device.DeviceContext, torch.Generator)


def _callables(owner, prefix: str, objs: dict) -> None:
    """A module's callables; a class's every attribute as its bases resolve it (a name defined on
    ``torch._C.TensorBase`` and overridden on ``torch.Tensor`` changes here too)."""
    if inspect.isclass(owner):
        resolved: dict = {}
        for base in reversed(owner.__mro__):  # what getattr_static finds for each name, in one pass
            resolved.update(vars(base))
        for name, obj in resolved.items():
            objs[f"{prefix}.{name}"] = obj
        return
    try:
        items = list(vars(owner).items())
    except TypeError:
        return
    for name, obj in items:
        if callable(obj) or isinstance(obj, (staticmethod, classmethod, property)):
            objs[f"{prefix}.{name}"] = obj


# the judge's own modules a draw runs through: every global of theirs, callable or not (a table such
# as compare's dtype widths replaced is as good as a function replaced)
_DRAWING_OWN = ("kbench_lib.measure.tensors", "kbench_lib.suite.reference", "kbench_lib.measure.compare", "kbench_lib.suite.problems")


def _drawing_state(cases: list[dict]) -> dict:
    """Everything a timed set's drawing runs through, by identity: the namespaces above, this
    module's drawing functions, each pending case's problem namespace (its values, the code of its
    functions, the callables of the modules it holds), and the interpreter's hooks (tracing,
    profiling, gc callbacks, signal handlers and interval timers: each could run candidate code in
    the middle of a draw)."""
    objs = {f"worker.{n}": globals()[n] for n in ("_draw_inputs", "draw_inputs", "upstream_grads", "_fingerprint",
                                                    "to_device", "require_grad")}
    modules = {id(m): m for m in _DRAWING_MODULES}
    for c in cases:
        modules.update({id(v): v for v in (c.get("namespace") or {}).values() if inspect.ismodule(v)})
    for m in modules.values():
        _callables(m, f"module:{m.__name__}", objs)
    _callables(builtins, "module:builtins", objs)
    for name in _DRAWING_OWN:
        for k, v in vars(sys.modules[name]).items():
            objs[f"own:{name}.{k}"] = v
    for cls in _DRAWING_CLASSES:
        _callables(cls, f"class:{cls.__module__}.{cls.__qualname__}", objs)
    for i, c in enumerate(cases):
        for k, v in (c.get("namespace") or {}).items():
            objs[f"problem[{i}].{k}"] = v
            if inspect.isfunction(v):
                for attr in ("__code__", "__defaults__", "__kwdefaults__"):
                    objs[f"problem[{i}].{k}.{attr}"] = getattr(v, attr)
    for op in _DRAW_OPS:  # each operator's dispatch table: a kernel registered over one changes it
        try:
            table = torch._C._dispatch_dump(op)
        except RuntimeError:
            continue
        if table:  # an empty dump is a name with no table ("aten::mul" without its overload)
            objs[f"dispatch:{op}"] = table
    objs["sys.gettrace"], objs["sys.getprofile"] = sys.gettrace(), sys.getprofile()
    objs["gc.callbacks"] = tuple(gc.callbacks)
    for sig in (signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGIO, signal.SIGCHLD, signal.SIGUSR1, signal.SIGUSR2):
        objs[f"signal.{sig.name}"] = signal.getsignal(sig)
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:  # Python 3.12+
        for tool in range(6):
            objs[f"sys.monitoring[{tool}]"] = monitoring.get_tool(tool)
    return objs


def _same(a, b) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and isinstance(a, (tuple, int, float, str)) and bool(a == b)
    except Exception:  # noqa: BLE001 - a value whose comparison fails is not the same value
        return False


def _drawing_tampered(before: dict, cases: list[dict]) -> list[str]:
    """What changed since ``before`` (:func:`_drawing_state` of the same ``cases``) that a draw
    would run through; a case drawn since (its namespace gone) is not looked at again."""
    now = _drawing_state(cases)
    changed = [k for k, v in now.items() if k in before and not _same(before[k], v)]
    # a callable removed from a namespace (deleted, to be found through a module __getattr__); a
    # drawn case's namespace is gone on purpose
    changed += [k for k in before if k.startswith(("module:", "class:", "own:", "dispatch:")) and k not in now]
    # a name added where lookups fall through: to a class (an override of a base's method), to the
    # judge's modules, to a pending problem's namespace (a global that shadows a builtin)
    pending = {k.split("]", 1)[0] for k in now if k.startswith("problem[")}
    changed += [k for k in now if k not in before and (k.startswith(("class:", "own:"))
                                                       or (k.startswith("problem[") and k.split("]", 1)[0] in pending))]
    for which, name in ((signal.ITIMER_REAL, "REAL"), (signal.ITIMER_VIRTUAL, "VIRTUAL"), (signal.ITIMER_PROF, "PROF")):
        if signal.getitimer(which) != (0.0, 0.0):
            changed.append(f"signal.setitimer(ITIMER_{name})")
    if torch._C._len_torch_function_stack() or torch._C._len_torch_dispatch_stack():
        changed.append("a torch function or dispatch mode is active")
    return changed


class _TimedDraws:
    """One timed configuration's input sets as a sequence whose sets are drawn on first use: the
    timing loop asks for set ``j`` just before its first timed call (outside the timed window), so
    no set exists before the call that first sees it, and no call can compute the answers of a
    later set ahead. Drawn by the judge's functions bound before the candidate was imported; each
    draw first checks that nothing it runs through was replaced or hooked (else the verdict is
    flagged ``input_drawing_tampered``), and its fingerprints go to the judge, which compares them
    with its own (the candidate cannot steer the data either)."""

    def __init__(self, cases: list[dict], metas: list[dict], indices: list[int], job: dict, device: torch.device,
                 backward: bool, before: dict, flags: list[str]):
        self.cases, self.metas, self.indices, self.job, self.device = cases, metas, indices, job, device
        self.backward, self.before, self.flags = backward, before, flags
        self.sets: dict[int, list] = {}
        self.seeds: dict[int, int] = {}
        self.reserved: list = []
        self.armed = False  # the timed trials have begun (timing's on_trials)
        self.current = -1   # the set the harness asked for last
        self.returned = -1  # the highest set whose timed call has returned (the worker's call wrapper)

    def arm(self) -> None:
        self.armed = True

    def reserve(self, like: list) -> None:
        """Holds blocks the size of every timed set (``like``: the tensors of one set of this
        configuration) until the first draw frees them: the warm-up then leaves the caching
        allocator holding blocks for the sets and for the outputs alike, and the draws take the
        former. Otherwise a draw takes a block the warm-up left for an output, and the first round
        of timed calls pays for fresh device allocations that later rounds do not (a false
        memoisation flag; see trials._warm_up)."""
        self.reserved = [_empty_like(t) for _ in self.indices for t in like if isinstance(t, _Tensor)]

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, j: int) -> list:
        if j in self.sets:
            self.current = j
            return self.sets[j]
        if not 0 <= j < len(self.indices):
            raise IndexError(j)
        tampered = _drawing_tampered(self.before, self.cases)
        # in order, once the trials have begun and the call on the set before has returned: anything
        # else asking for a set is the candidate, drawing it ahead to answer it off the clock (this
        # object is reachable from its code; this is a check of the harness's own order, not a wall)
        if not self.armed or j != len(self.sets) or self.returned < j - 1:
            tampered.append("a timed set requested before its turn")
        if tampered:
            text = "input_drawing_tampered: " + ", ".join(tampered[:12])
            if text not in self.flags:
                self.flags.append(text)
        i = self.indices[j]
        case = self.cases[i]
        self.reserved.clear()  # its blocks are cached by the allocator for this draw and the next
        # the set's seed: the OS's randomness, now (the judge learns it from timed_inputs and draws
        # the same set for its re-check); no seed of a timed set exists before its first timed call
        seed = int.from_bytes(_urandom(8), "little") >> 1
        gc_was = gc.isenabled()
        gc.disable()  # no collection (and no gc callback) inside a draw
        try:
            if case["inputs"] is None:
                _draw_inputs(case, {**self.metas[i], "input_seed": seed}, self.job, str(self.device))
                self.seeds[j] = seed
            inputs = to_device(case["inputs"], self.device)
        finally:
            if gc_was:
                gc.enable()
        if self.device.type == "cuda":
            # the harness reads the set once (never the candidate): the first timed call on it then
            # meets warm address translation as later calls do
            for t in inputs:
                if isinstance(t, _Tensor) and t.numel():
                    t.sum()
            torch.cuda.synchronize(self.device)
        if self.backward:
            require_grad(inputs)
            inputs = [*inputs, case["grad_output"]]  # each set carries its upstream gradient last
        self.sets[j] = inputs
        self.current = j
        return inputs

    def drawn(self) -> list[list]:
        """The sets drawn so far, in order (every set, once each has been called)."""
        return [self.sets[j] for j in sorted(self.sets)]

    def fingerprints(self) -> dict[str, dict]:
        """Each drawn set's seed and its inputs' fingerprints, by case index (``timed_inputs``)."""
        return {str(self.indices[j]): {"seed": self.seeds.get(j), "inputs": self.cases[self.indices[j]]["fingerprints"]}
                for j in sorted(self.sets)}
