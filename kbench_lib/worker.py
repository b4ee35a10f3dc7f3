"""The candidate's process: ``python -m kbench_lib.worker {build|run} JOBDIR``.

WARNING: this process imports and runs untrusted code. It is started by :mod:`kbench_lib.sandbox`
(scrubbed environment, private directory, limits, no network) and holds nothing worth stealing:
no expected output, no comparison. It receives a job (``job.json`` and one ``case_<i>.pt`` per
configuration and seed, written by the judge), runs ``ModelNew`` on each case's inputs, writes the
raw outputs (and the inputs as they are after the call) to ``out/``, times the default configuration
over a rotation of input sets (then each variant with timed sets in the job, ``time_variants``),
and reports events as JSON lines on the message pipe. The judge
decides everything else.

Everything this module relies on after the candidate is imported is bound before the import
(torch functions, timers) and checked afterwards.
"""
from __future__ import annotations

import builtins
import gc
import importlib.util
import inspect
import json
import os
import signal
import sys
import threading
import traceback

import torch
import torch.utils._device  # the device context that routes factories (checked around each timed draw)

from .measure import compare, device_arena, profiling, tensorfile, timing  # bound before any candidate code runs
from .measure.compare import fingerprint as _fingerprint
from .suite.problems import Config, instantiate, load_problem
from .suite.reference import draw_inputs, reference_state, set_flags, state_fingerprint, upstream_grads
from .measure.tensors import as_output_list, dtype_of, require_grad, to_device

_Tensor = torch.Tensor
_detach = torch.Tensor.detach
_to = torch.Tensor.to
_clone = torch.Tensor.clone
_empty_like = torch.empty_like
_urandom = os.urandom
_OOM = torch.OutOfMemoryError
_mem_get_info = torch.cuda.mem_get_info
_memory_reserved = torch.cuda.memory_reserved
_memory_allocated = torch.cuda.memory_allocated
_empty_cache = torch.cuda.empty_cache
SAMPLE_HEADROOM = 0.25  # device samples leave at least this share of the device's memory free
_write_file = tensorfile.write
_OUT_FD: list[int] = []  # the job's out folder, opened before the candidate is imported (run mode)
_ARENA: list = []  # the judge's device arena for this worker's outputs, mapped before the candidate is imported (or [None])
_os_read = os.read  # bound before any candidate code runs


def _take_gate() -> int | None:
    """The gate's descriptor (``sandbox.start_isolated(gated=True)``), taken out of the environment
    before the candidate exists; None when the judge runs this worker alone."""
    fd = os.environ.pop("KBENCH_GATE_FD", None)
    try:
        return int(fd) if fd is not None else None
    except ValueError:
        return None


def _await_gate(fd: int | None, chan) -> None:
    """Waits until the judge opens the gate: in a batch this process's start and correctness calls
    may run beside the judge's own work on the previous candidate, never its profile or timed calls.
    A candidate that closes or drains the gate only makes its own wait end early (its timing then
    shares the GPU with that work, which can only slow it) or never (its run's time limit ends it)."""
    if fd is None:
        return
    chan.send(event="stage", stage="gate")
    try:
        _os_read(fd, 1)
    except OSError:
        pass


def _write_tensors(path: str, tree) -> None:
    """A result file, written relative to the ``out`` folder opened before the candidate existed:
    a candidate that swaps ``out`` for a symlink does not redirect the harness's writes. Tensors on
    the device go into the judge's device arena where it gave one and they fit."""
    arena = _ARENA[0] if _ARENA else None
    if _OUT_FD:
        _write_file(os.path.basename(path), tree, dir_fd=_OUT_FD[0], arena=arena)
    else:
        _write_file(path, tree, arena=arena)


_exit = os._exit
_monotonic = timing._monotonic  # the clock bound before any candidate code runs
_write = os.write
_dumps = json.dumps
MAX_TRACE = 4000
MEMO_RATIO = 0.3  # repeats on seen data under 30% of first calls on unseen data
MEMO_MIN_MS = 0.005


class Channel:
    """Newline-delimited JSON messages to the judge over an inherited pipe."""

    def __init__(self):
        fd = int(os.environ.pop("KBENCH_MSG_FD", "-1"))
        self.fd = fd
        if fd >= 0:
            os.set_inheritable(fd, False)  # the candidate's own children never get it

    def send(self, **msg) -> None:
        if self.fd < 0:
            return
        data = (_dumps(msg, default=str) + "\n").encode()
        while data:
            n = _write(self.fd, data)
            data = data[n:]


_channel: Channel | None = None


def channel() -> Channel:
    """The one message channel of this process (the pipe's number is read from the environment once)."""
    global _channel
    if _channel is None:
        _channel = Channel()
    return _channel


def _trace(e: BaseException) -> str:
    text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return text[-MAX_TRACE:]


def _is_build_error(e: BaseException) -> bool:
    text = f"{type(e).__name__}: {e}"
    markers = ("Error building extension", "ninja: build stopped", "CalledProcessError", "error: command", "CompilationError")
    return any(m in text for m in markers) or type(e).__name__ in ("CalledProcessError", "CompilationError")


def import_candidate(path: str):
    spec = importlib.util.spec_from_file_location("kbench_candidate", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["kbench_candidate"] = module
    spec.loader.exec_module(module)
    return module


def _failure_of(e: BaseException) -> str:
    if isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e).lower():
        return "oom"
    if isinstance(e, MemoryError):
        return "oom"
    return "runtime_error"


def poison_allocator(device: torch.device, nbytes: int) -> None:
    """Fill memory the caching allocator will hand out next with NaN (THREATS #4, #18): an output
    made with torch.empty and only partly written then holds NaN, not a stale answer."""
    if device.type != "cuda" or nbytes <= 0:
        return
    free, _ = torch.cuda.mem_get_info(device)
    n = min(nbytes, int(free * 0.5)) // 4
    if n > 0:
        block = torch.empty(n, dtype=torch.float32, device=device)
        block.fill_(float("nan"))
        del block  # back to the cache, not to the driver


def _check_output(out, inputs) -> tuple[list | None, str | None, list[str]]:
    """(outputs as plain tensors, error, flags). Only exact torch.Tensor with real storage passes."""
    flags = []
    outs = as_output_list(out)
    for i, o in enumerate(outs):
        if type(o) is not _Tensor:
            return None, f"output {i} is a {type(o).__module__}.{type(o).__name__}, not a torch.Tensor", flags
        if o.is_meta or o.layout != torch.strided:
            return None, f"output {i} has no real strided storage ({o.layout}, meta={o.is_meta})", flags
        try:
            ptr = o.untyped_storage().data_ptr()
        except Exception as e:  # noqa: BLE001 - anything odd about storage is the candidate's failure
            return None, f"output {i} has no accessible storage: {e}", flags
        for j, t in enumerate(inputs):
            if isinstance(t, _Tensor) and t.numel() and ptr and t.untyped_storage().data_ptr() == ptr:
                flags.append(f"output_aliases_input: output {i} shares storage with input {j}")
    return outs, None, flags


def _to_cpu(objs):
    """Copies to the CPU through methods bound before the candidate was imported (THREATS #13)."""
    return [_to(_detach(o), "cpu", copy=True) if isinstance(o, _Tensor) else o for o in objs]


def _snapshot(outs):
    """A copy of timed outputs for re-checking, taken between timed calls without leaving the GPU
    idle: a clone on the outputs' own device, moved to the CPU once timing is over.

    Why not copy to the CPU at once: a synchronous device-to-host copy leaves the GPU's SMs idle
    (about 50 ms for a 64 MB output), and the next timed call runs slow, as after any idle spell
    (the settle warm-up exists for the same reason; we did not record clocks to show why). Every
    first call on a set is sampled, so the first round paid this most of all. Measured on the H100
    (benchmarks/first_round.py): after such copies an honest Triton kernel's first round took
    0.22 ms against a 0.063-0.078 ms median (a false memoisation flag), eager PyTorch's 0.22 ms
    against 0.16 ms. Sleeping as long as the copy did had the same effect, turning the garbage
    collector off did not; with device clones the first round matched the median within 1%.

    A clone stays in device memory, where the candidate could in principle reach it. Changing it
    later would take work running after the call returns: a host thread or unjoined stream work,
    which the timing phase flags on their own.

    Samples must not take memory the candidate needs: where the clones would leave less than
    ``SAMPLE_HEADROOM`` of the device's memory free (or run out), the copy goes to the CPU. Blocks
    the caching allocator holds unused count as free (this process reuses them): counted as used,
    the clones of a re-measured run or of an earlier timed variant pushed samples to the CPU."""
    devices = {o.device for o in outs if o.is_cuda}
    try:
        for d in devices:
            free, total = _mem_get_info(d)
            free += _memory_reserved(d) - _memory_allocated(d)  # cached blocks are this process's to reuse
            need = sum(o.untyped_storage().nbytes() for o in outs if o.device == d)
            if free - need < SAMPLE_HEADROOM * total:
                return _to_cpu(outs)
        return [_clone(_detach(o)) for o in outs]
    except _OOM:
        return _to_cpu(outs)


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _settings() -> dict:
    """The global numerics settings a candidate must not change (THREATS #16, #17)."""
    return {
        "matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "cudnn.benchmark": torch.backends.cudnn.benchmark,
        "cudnn.deterministic": torch.backends.cudnn.deterministic,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "matmul.fp16_reduced_precision": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "matmul.bf16_reduced_precision": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
    }


def _harness_objects() -> dict:
    """Every function the harness relies on after the candidate is imported, by identity
    (THREATS #14): this module's, the timing, profiling and compare (input fingerprints) modules',
    and the torch entry points they call."""
    import kbench_lib.worker as worker_module  # the same code when this runs as __main__

    objs = {}
    for mod in {sys.modules[__name__], worker_module, timing, profiling, compare, tensorfile, device_arena}:
        for name, obj in vars(mod).items():
            if callable(obj) or name.startswith("_") or name.isupper():  # constants too: UNJOINED_SHARE, DRIFT, ...
                objs[f"{mod.__name__}.{name}"] = obj
    objs[f"{__name__}.Channel.send"] = inspect.getattr_static(Channel, "send")
    arena = _ARENA[0] if _ARENA else None
    objs["device_arena: the arena"], objs["device_arena: its tensor"] = arena, getattr(arena, "tensor", None)
    for name in ("take", "view"):
        objs[f"device_arena.Arena.{name}"] = inspect.getattr_static(device_arena.Arena, name)
    for name in dir(torch.Tensor):  # through its bases: fingerprints call Tensor methods (__int__, view, ...)
        objs[f"torch.Tensor.{name}"] = inspect.getattr_static(torch.Tensor, name, None)
    for mod in ("kbench_lib.measure.tensors", "kbench_lib.suite.reference"):
        for name, obj in vars(sys.modules[mod]).items():
            objs[f"{mod}.{name}"] = obj
    for owner, names in (
        (torch.Tensor, ("to", "detach", "clone", "cpu", "untyped_storage", "copy_", "__torch_function__",
                        "view", "contiguous", "reshape", "sum", "element_size", "__mul__", "__and__", "__iadd__", "__getitem__",
                        "numel", "is_complex", "narrow")),
        (torch, ("frombuffer", "equal", "allclose", "isfinite", "manual_seed", "zeros", "arange", "view_as_real")),
        (torch.cuda, ("synchronize", "Event", "mem_get_info")),
        (os, ("write", "urandom", "listdir", "_exit")),
        (json, ("dumps",)),
    ):
        for name in names:  # getattr_static: the stored object itself, not a fresh bound method
            objs[f"{getattr(owner, '__name__', owner)}.{name}"] = inspect.getattr_static(owner, name, None)
    return objs


def _changed(before: dict) -> list[str]:
    now = _harness_objects()
    return sorted(k for k, v in before.items() if now.get(k) is not v)


def _processes() -> dict[int, tuple[str, int, int]]:
    """Every process this one can see: pid -> (state, parent pid, CPU ticks used: user + system)."""
    found = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                found[int(entry)] = (fields[0], int(fields[1]), int(fields[11]) + int(fields[12]))
            except (OSError, IndexError, ValueError):
                continue
    return found


def _child_processes() -> list[int]:
    """Processes this one started that are still alive (THREATS #12: work outside the window)."""
    me = os.getpid()
    return [pid for pid, (state, ppid, _) in _processes().items() if ppid == me and state != "Z"]


def _descendants_cpu() -> tuple[int, float]:
    """(processes descending from this one, the CPU seconds they have used): work of the
    candidate's beside the timed calls (a compiler's worker pool starting up, say), which slows
    the host's launches of the calls timed meanwhile."""
    procs = _processes()
    mine, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {p for p, (_, pp, _) in procs.items() if pp in frontier and p not in mine}
        mine |= frontier
    return len(mine), sum(procs[p][2] for p in mine) / os.sysconf("SC_CLK_TCK")


def _start_runtime_threads(device: torch.device, profile: bool) -> None:
    """Let torch start its own thread pools (intra-op, inter-op, profiler) before threads are
    counted, so that only threads the candidate leaves behind show (THREATS #12)."""
    x = torch.randn(512, 512)
    (x @ x).relu_().sum()
    torch.randn(1 << 20).exp_().sum()
    if device.type == "cuda":
        y = x.to(device)
        (y @ y).sum().item()
    if profile or device.type == "cuda":  # the timing's device-busy clock profiles too
        profiling.profile_call(lambda: None, [], device.type)
    try:  # tqdm's monitor thread, which torch.compile's progress bars start, is not the candidate's
        import tqdm

        tqdm.tqdm.monitor_interval = 0
    except ImportError:
        pass


def run(mode: str, jobdir: str) -> int:
    t_main = _monotonic()
    chan = channel()
    gate = _take_gate()
    with open(os.path.join(jobdir, "job.json")) as f:
        job = json.load(f)
    device = torch.device(job["device"])
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    backward = job["task"] == "backward"
    dtype = dtype_of(job["precision"])
    if mode == "run":
        os.unlink(os.path.join(jobdir, "job.json"))
    set_flags()
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.empty(1, device=device)  # create the context before the candidate runs
        timing.prepare(device)  # the end-to-end clock's head start, loaded before any candidate code
    else:
        # CPU: memory torch.empty hands out is filled with NaN, as the allocator poison does on CUDA
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = True
    t_arena = _monotonic()
    _ARENA[:] = [device_arena.attach_from_env(device)]  # mapped (its descriptor closed) before any candidate code
    t_context = _monotonic()
    # every checked input set is drawn now, before the candidate exists (it cannot steer or observe
    # the drawing), by the judge's own code and seeds; the fingerprints prove both hold the same
    # data. Timed sets are drawn just before their first timed calls (_TimedDraws): one that
    # existed now could be found by the candidate and answered ahead, off the clock
    loaded = _draw_cases(job, device) if mode == "run" else []
    t_drawn = _monotonic()
    if mode == "run":
        _warm_imports()
    drawing = _drawing_state(loaded)  # what drawing the timed sets later relies on, as it is now
    if mode == "run":  # a timed set's fingerprints come when it is drawn (timed_inputs)
        chan.send(event="inputs", cases=[{"inputs": c["fingerprints"], "state": c["state_sums"]} for c in loaded])
    outdir = os.path.join(jobdir, "out")
    _OUT_FD.clear()
    if mode == "run":
        try:
            os.makedirs(outdir, exist_ok=True)  # a file or dangling link planted at import raises here
            _OUT_FD.append(os.open(outdir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC))
        except OSError as e:  # replaced by the candidate's import during the build (a symlink)
            chan.send(event="failure", failure="crash", message=f"the job's out folder is not a folder: {e.strerror}")
            return 0
    t_imported = _monotonic()
    _start_runtime_threads(device, job.get("profile", True))
    threads_before = _threads()
    settings = _settings()
    harness = _harness_objects()
    # where the start went (the judge's own speed): the device context and clock, the drawn input
    # sets, late imports, the runtime's threads and the harness's snapshots
    parts = {"context": t_arena - t_main, "draw": t_drawn - t_context, "imports": t_imported - t_drawn,
             "threads": _monotonic() - t_imported}
    if _ARENA[0] is not None:  # outputs go to the judge's device arena (its mapping took this long)
        parts["arena"] = t_context - t_arena
    chan.send(event="stage", stage="build" if mode == "build" else "load", parts={k: round(v, 4) for k, v in parts.items()})
    try:
        module = import_candidate(job["candidate_path"])
    except SyntaxError as e:
        chan.send(event="failure", failure="load_error", message=f"syntax error in candidate: {e}")
        return 0
    except BaseException as e:  # noqa: BLE001 - the candidate's import may raise anything
        if isinstance(e, SystemExit):
            chan.send(event="failure", failure="load_error", message=f"candidate called sys.exit({e.code}) at import")
            return 0
        cat = "compile_error" if _is_build_error(e) else "load_error"
        chan.send(event="failure", failure=cat, message=_trace(e))
        return 0
    if mode == "build":
        chan.send(event="built")
        return 0
    ModelNew = getattr(module, "ModelNew", None)
    if not isinstance(ModelNew, type) or not issubclass(ModelNew, torch.nn.Module):
        chan.send(event="failure", failure="load_error", message="candidate defines no class ModelNew(nn.Module)")
        return 0

    models: dict = {}

    def make_model(case):
        key = (case["config"], case["init_seed"])
        if key in models:
            return models[key]
        torch.manual_seed(case["init_seed"])
        try:
            model = ModelNew(*case["init_inputs"])
        except TypeError as e:
            raise _LoadError(f"ModelNew(*init_inputs) failed: {e}") from e
        model = model.to(device=device, dtype=dtype) if dtype != torch.float32 else model.to(device)
        ref_state = case["state_dict"]
        own = model.state_dict()
        if set(own) == set(ref_state):
            try:
                model.load_state_dict(ref_state, strict=True)
            except RuntimeError as e:
                raise _LoadError(f"ModelNew's state_dict matches the reference's names but not its shapes: {e}") from e
        models.clear()
        models[key] = model
        return model

    flags: list[str] = []
    cases = job["cases"]

    def check_settings(where: str) -> None:
        now = _settings()
        if now != settings:
            changed = ", ".join(f"{k}: {settings[k]} -> {now[k]}" for k in settings if now[k] != settings[k])
            text = f"global_settings_changed: {changed} ({where})"
            if text not in flags:
                flags.append(text)
            set_flags()  # measure on the judge's settings regardless

    failed = _check_configs(cases, loaded, make_model, device, backward, outdir, chan, flags, check_settings, job)
    if failed is _STOPPED:
        chan.send(event="done", flags=flags + _leftover_flags(harness, threads_before))
        return 0
    if cases and cases[0]["config"] in failed:  # the default configuration failed: nothing is timed
        chan.send(event="done", flags=flags + _leftover_flags(harness, threads_before))
        return 0

    groups = timing_groups(cases)
    timed, warm = (groups[0][1], groups[0][2]) if groups else ([], [])
    if timed:
        _await_gate(gate, chan)
    if timed and job.get("profile", True):
        chan.send(event="stage", stage="profile")
        try:
            case = loaded[warm[0] if warm else timed[0]]
            if case["inputs"] is None:  # no checked set to profile on (not in kbench's plans): a set of its own
                case = {**case, "namespace": instantiate(load_problem(job["problem_path"], job.get("problem_level")),
                                                         Config(case["config"], cases[timed[0]].get("overrides") or {}))}
                _draw_inputs(case, {**cases[timed[0]], "input_seed": int.from_bytes(_urandom(8), "little") >> 1}, job, str(device))
            model = make_model(case)
            inputs = to_device(case["inputs"], device)
            with torch.no_grad():
                chan.send(event="profile", profile=profiling.profile_call(model, inputs, device.type))
            del inputs
        except BaseException as e:  # noqa: BLE001 - it ran correctly before: a profile failure is a flag
            if isinstance(e, SystemExit):
                chan.send(event="failure", failure="crash", message=f"candidate called sys.exit({e.code})")
                return 0
            flags.append(f"profile_failed: {type(e).__name__}: {str(e)[:200]}")
    if timed and job.get("timing", {}).get("enabled", True):
        try:
            # the default configuration is timed last: once its samples are in timing.kbt no more
            # candidate code runs, so a later call cannot rewrite the file that decides its
            # speedup (the variants' files stay open to that; they feed analyses only)
            order = list(enumerate(groups))
            for k, (config, timed, warm) in order[1:] + order[:1]:
                if config in failed:
                    continue  # a variant that failed its checks is not timed
                chan.send(event="stage", stage="timing" if k == 0 else "variant_timing", config=config)
                draws = _TimedDraws(loaded, cases, timed, job, device, backward, drawing, flags)
                found = _time(job, loaded, draws, warm, make_model, device, backward, outdir, chan, variant=config if k else None)
                flags.extend(f if k == 0 else f"{f} [{config}]" for f in found)
                if k and device.type == "cuda":  # a variant's sets and samples leave the cache before the default is timed
                    _empty_cache()
                check_settings("during timing" if k == 0 else f"during the timing of {config}")
        except _LoadError as e:
            chan.send(event="failure", failure="load_error", message=str(e))
            return 0
        except BaseException as e:  # noqa: BLE001 - on the default configuration or a variant: the candidate's failure
            where = f"while timing variant {config}: " if k else f"[{config}] while timing: "
            if isinstance(e, SystemExit):
                chan.send(event="failure", failure="crash", message=f"{where}candidate called sys.exit({e.code})")
                return 0
            chan.send(event="failure", failure=_failure_of(e), message=where + _trace(e), flags=_leftover_flags(harness, threads_before))
            return 0

    chan.send(event="done", flags=flags + _leftover_flags(harness, threads_before))
    return 0


_STOPPED = object()  # _check_configs: a failure left the process unfit to check more


def _check_configs(cases, loaded, make_model, device, backward, outdir, chan, flags, check_settings, job):
    """Every checked set of every configuration, each set's record written to ``case_<i>.kbt``.
    A set that fails ends its configuration (its other sets are skipped: reported ``case_failed``)
    and the next configuration is checked, so that each configuration's result is known; a failure
    that leaves a CUDA context unusable stops the checks (``stopped``). Returns the names of the
    configurations that failed, or :data:`_STOPPED`."""
    failed: set = set()
    for i, meta in enumerate(cases):
        if meta.get("timed") or meta["config"] in failed:
            continue  # timing-only sets: never seen before the timed calls; a failed configuration is settled
        chan.send(event="stage", stage="correctness", case=i)
        failure = _check_one(i, loaded[i], make_model, device, backward, outdir, check_settings, flags, job.get("poison_bytes", 0))
        if failure is None:
            chan.send(event="case_done", case=i)
            continue
        category, message = failure
        failed.add(meta["config"])
        chan.send(event="case_failed", case=i, config=meta["config"], failure=category, message=f"[{meta['config']}] {message}")
        if device.type == "cuda" and not _context_usable(device):
            chan.send(event="stopped", case=i, reason=f"the CUDA context was unusable after {meta['config']} failed ({category})")
            return _STOPPED
    return failed


def _check_one(i, case, make_model, device, backward, outdir, check_settings, flags, poison_bytes: int) -> tuple[str, str] | None:
    """One checked set's call: its record written, or (failure category, message)."""
    try:
        model = make_model(case)
        inputs = to_device(case["inputs"], device)
        if backward:
            require_grad(inputs)
        poison_allocator(device, poison_bytes)
        set_flags()
        if backward:
            model.zero_grad(set_to_none=True)
            out = model(*inputs)
        else:
            with torch.no_grad():
                out = model(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        check_settings("during a correctness call")
        outs, err, out_flags = _check_output(out, inputs)
        if err:
            return "output_mismatch", err
        flags.extend(f for f in out_flags if f not in flags)
        record = {"outputs": [_detach(o) for o in outs], "inputs_after": _inputs_after(inputs)}
        if backward:
            grads = case["grad_output"]
            if len(grads) != len(outs) or any(o.shape != g.shape for o, g in zip(outs, grads)):
                return "shape_mismatch", "output shapes differ from the reference's"
            torch.autograd.backward(outs, grads)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            record["input_grads"] = [
                (_detach(t.grad) if t.grad is not None else None) if isinstance(t, _Tensor) and t.is_floating_point() else None
                for t in inputs
            ]
            record["param_grads"] = {n: _detach(p.grad) for n, p in model.named_parameters() if p.grad is not None}
        _write_tensors(os.path.join(outdir, f"case_{i}.kbt"), record)
        return None
    except _LoadError as e:
        return "load_error", str(e)
    except BaseException as e:  # noqa: BLE001 - the candidate's call may raise anything
        if isinstance(e, SystemExit):
            return "crash", f"candidate called sys.exit({e.code})"
        return _failure_of(e), _trace(e)


def _context_usable(device: torch.device) -> bool:
    """Whether the CUDA context still runs work (an illegal address or a failed launch leaves it
    unusable for the rest of the process's life)."""
    try:
        torch.cuda.synchronize(device)
        torch.empty(1, device=device).add_(1)
        torch.cuda.synchronize(device)
        return True
    except BaseException:  # noqa: BLE001
        return False


def _leftover_flags(harness, threads_before: int) -> list[str]:
    """What the candidate left behind: changed timer bindings or harness objects, processes and
    threads still running. Checked after the calls, and also when a call failed (a candidate that
    defers its work to a thread can exhaust memory before it is caught any other way)."""
    flags = []
    tampered = timing.tampered_bindings()
    if tampered:
        flags.append("timer_tampered: " + ", ".join(tampered))
    changed = _changed(harness)
    if changed:
        flags.append("harness_tampered: " + ", ".join(changed[:12]))
    children = _child_processes()
    if children:
        flags.append(f"processes_started: {len(children)} process(es) the candidate started are still running")
    threads_after = _threads()
    if threads_after > threads_before:
        flags.append(f"threads_started: {threads_after - threads_before} thread(s) still running after the calls")
    return flags


def timing_groups(cases: list[dict]) -> list[tuple[str, list[int], list[int]]]:
    """(configuration, indices of its timed sets, indices of its checked sets) for every
    configuration with timed sets in the job, in the order of their first timed set (the plan puts
    the default configuration's first: kbench_lib.prepared.plan_cases). The judge groups its plan
    by this same function."""
    names = list(dict.fromkeys(m["config"] for m in cases if m.get("timed")))
    return [(n, [i for i, m in enumerate(cases) if m.get("timed") and m["config"] == n],
             [i for i, m in enumerate(cases) if not m.get("timed") and m["config"] == n]) for n in names]


def timing_file(timed: list[int], variant: str | None) -> str:
    """The file a timed run's samples go to: ``timing.kbt`` for the default configuration, else
    named after the index of the variant's first timed set (no name the candidate could steer)."""
    return "timing.kbt" if variant is None else f"timing_{timed[0]}.kbt"


def _time(job, all_cases, draws: "_TimedDraws", warm, make_model, device, backward, outdir, chan, variant: str | None = None) -> list[str]:
    """Times one configuration (the default, or ``variant``) over a rotation of input sets the
    candidate has never seen, each drawn just before its first timed call (``draws``; warm-up runs
    on that configuration's correctness inputs); keeps a sample of timed outputs chosen after each
    call returns, so no call can know it will be re-checked (THREATS #8, #9). Reports the timed
    sets' fingerprints (``timed_inputs``), then a ``timing`` event (``variant_timing`` for a variant)."""
    tcfg = job.get("timing", {})
    t_start = _monotonic()
    timed = draws.indices
    model = make_model(all_cases[timed[0]])
    warmup_sets = [to_device(all_cases[i]["inputs"], device) for i in warm] or None
    warm_grads = [all_cases[i]["grad_output"] for i in warm] if backward and warm else None
    samples: dict[int, object] = {}

    if backward:
        if warmup_sets:
            for s in warmup_sets:
                require_grad(s)
            warmup_sets = [[*s, g] for s, g in zip(warmup_sets, warm_grads)]

        def call(*args):
            model.zero_grad(set_to_none=True)
            out = model(*args[:-1])
            torch.autograd.backward(as_output_list(out), args[-1])
            draws.returned = max(draws.returned, draws.current)
            return out
    else:
        def call(*inputs):
            with torch.no_grad():
                out = model(*inputs)
            draws.returned = max(draws.returned, draws.current)
            return out
    if not warmup_sets:  # no checked set to warm up on (not in kbench's plans): the warm-up draws the timed sets
        draws.arm()
    if device.type == "cuda" and warmup_sets:
        draws.reserve(warmup_sets[0][:-1] if backward else warmup_sets[0])

    held: dict[int, tuple] = {}  # the last output of each input set, kept alive for one round
    seen: dict[int, int] = {}
    reused = [0]

    def keep(k, set_index, out):
        if k == 0:  # a run measured anew (timing._runs): its own calls are the ones re-checked
            seen.clear()
            samples.clear()
        # an output whose storage is still held from an earlier call was not computed by this call
        # (a fresh result cannot live in memory that is in use): cached answers (THREATS #8)
        outs = as_output_list(out)
        ptrs = {o.untyped_storage().data_ptr() for o in outs if type(o) is _Tensor and o.numel()}
        if any(ptrs & p for _, p in held.values()):
            reused[0] += 1
        held[set_index] = (out, ptrs)
        # reservoir sampling, decided after the call returned from the OS's randomness: each timed
        # call of a set is equally likely to be the one re-checked, and one always is
        seen[set_index] = seen.get(set_index, 0) + 1
        if int.from_bytes(os.urandom(4), "little") % seen[set_index] == 0:
            if all(type(o) is _Tensor for o in outs):
                samples[set_index] = _snapshot(outs)

    set_flags()
    if device.type == "cpu":
        torch.set_num_threads(1)  # CPU timings: one core each for candidate and baseline, steadier
    n_others, cpu_before = _descendants_cpu()
    t_clock = _monotonic()
    result = timing.time_callable(
        call,
        draws,
        device.type,
        warmup_ms=tcfg.get("warmup_ms", 25.0),
        min_trials=tcfg.get("min_trials", 100),
        max_trials=tcfg.get("max_trials", 2000),
        budget_s=tcfg.get("budget_s", 10.0),
        target_rse=tcfg.get("target_rse", 0.005),
        after_call=keep if job.get("guards", True) else None,
        warmup_sets=warmup_sets,
        on_trials=draws.arm,
        **({"trace": True} if tcfg.get("trace") and device.type == "cuda" else {}),
    )
    t_written = _monotonic()
    result.others, result.others_cpu_s = n_others, round(max(0.0, _descendants_cpu()[1] - cpu_before), 3)
    input_sets = [s[:-1] if backward else s for s in draws.drawn()]
    record = {"samples": {str(timed[j]): v for j, v in samples.items()},
              "inputs_after": {str(timed[j]): _inputs_after(s) for j, s in enumerate(input_sets)}}
    gc_was = gc.isenabled()
    gc.disable()  # no finalizer of the candidate's between the write and its report
    try:
        _write_tensors(os.path.join(outdir, timing_file(timed, variant)), record)
        # what the file holds, reported at once: candidate code can still run after this (a finalizer
        # when the worker lets go of its outputs, a patched settings property), and a file rewritten
        # then no longer matches (the judge compares)
        written = {"samples": {k: [_fingerprint(o)["sums"] for o in v] for k, v in record["samples"].items()},
                   "inputs_after": record["inputs_after"]}
        chan.send(event="timed_inputs", config=variant, cases=draws.fingerprints(), written=written)
    finally:
        if gc_was:
            gc.enable()
    result.phase_s = {"inputs": round(t_clock - t_start, 4), **result.phase_s, "write": round(_monotonic() - t_written, 4)}
    if variant is None:
        chan.send(event="timing", timing=result.as_dict())
    else:
        chan.send(event="variant_timing", config=variant, timing=result.as_dict())
    held.clear()
    out = []
    if reused[0]:
        out.append(f"output_reused: {reused[0]} timed calls returned a tensor still held from an earlier call (cached or static outputs)")
    # a single trial with a late gap is host jitter; a candidate that leaves work on another stream
    # does so on (nearly) every call, in the timed run and in its re-check
    if timing.unjoined_confirmed(result):
        out.append(f"side_stream_unjoined: {result.unjoined_trials} of {result.n_trials} timed calls and {result.unjoined_recheck} of "
                   f"{result.recheck_calls} calls of a re-check left work running on another stream")
    # the first call on never-seen data against later calls on the same data: a kernel that does
    # the work takes as long both times (the L2 cache is flushed before each); one that caches
    # answers by pointer or fingerprint is fast only once it has seen the data (THREATS #8)
    # (CUDA only: with the L2 flushed and device events the two are comparable; on a shared CPU the
    # first calls can be slowed by thread-pool wake-ups far beyond any real difference)
    if (device.type == "cuda" and result.first_round_ms and result.median_ms < MEMO_RATIO * result.first_round_ms
            and result.first_round_ms - result.median_ms > MEMO_MIN_MS):
        late = f" ({result.first_round_late} of them issued late)" if result.first_round_late else ""
        out.append(f"memoisation_suspected: first calls on new inputs took {result.first_round_ms:.4g} ms{late}, repeats {result.median_ms:.4g} ms")
    return out


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
        key = (m["config"], m["init_seed"])
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
# device context that routes factories to the device (THREATS #14: patched, any of them could
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


def _warm_imports() -> None:
    """The modules the fork server imports before any fork (a forked worker has them already):
    imported later, by the profiler or a candidate's torch.compile, torch._dynamo rebinds
    ``torch.manual_seed``, which the check around each timed draw would read as tampering."""
    from .isolation.process_setup import WARM_IMPORTS

    for name in WARM_IMPORTS:
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - an optional package missing here (triton on a CPU machine)
                pass


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
        memoisation flag; see timing._warm_up)."""
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


def _inputs_after(inputs) -> list:
    """The inputs as the call left them, as fingerprints computed on their device (the judge
    compares them with its own copy; see compare.fingerprint)."""
    return [_fingerprint(t) if isinstance(t, _Tensor) else t for t in inputs]


class _LoadError(Exception):
    pass


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    mode, jobdir = argv[0], argv[1]
    try:
        code = run(mode, jobdir)
    except BaseException as e:  # noqa: BLE001 - a fault of the harness itself, not a verdict
        sys.stderr.write(_trace(e))
        try:
            channel().send(event="harness_error", message=_trace(e))
        except Exception:  # noqa: BLE001
            pass
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    _exit(code)  # never wait for threads the candidate left behind


if __name__ == "__main__":
    main()
