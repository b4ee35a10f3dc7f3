"""What a forward call actually ran, from torch.profiler: the ATen compute ops and the device kernels.

Used for threat #1-#3 (library passthrough, fallback, decoy kernels): a candidate is judged by what
ran, not by what its source says. The reference's *compute ops* are the lowest ATen ops of its
forward that do arithmetic (views, allocation, copies and metadata are ignored; an op such as
``aten::linear`` whose work is done by a child ``aten::addmm`` counts as the child). A candidate
whose forward itself executes every one of those ops, as often as the reference does, replaced
nothing, whatever custom kernel it also launched: it is a library passthrough. A candidate that
keeps the library GEMM and replaces the rest (a fused epilogue) lacks the epilogue's ops and passes.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import torch
from torch.profiler import ProfilerActivity, profile

from ..core import cpu_sets

STRUCTURAL = {
    "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::zeros", "aten::zeros_like", "aten::ones",
    "aten::ones_like", "aten::full", "aten::full_like", "aten::fill_", "aten::zero_", "aten::view", "aten::_unsafe_view",
    "aten::reshape", "aten::as_strided", "aten::t", "aten::transpose", "aten::permute", "aten::expand",
    "aten::expand_as", "aten::contiguous", "aten::copy_", "aten::_to_copy", "aten::to", "aten::detach", "aten::detach_",
    "aten::alias", "aten::slice", "aten::select", "aten::narrow", "aten::unsqueeze", "aten::squeeze", "aten::flatten",
    "aten::unflatten", "aten::resolve_conj", "aten::resolve_neg", "aten::split", "aten::split_with_sizes", "aten::chunk",
    "aten::unbind", "aten::numel", "aten::size", "aten::stride", "aten::item", "aten::_local_scalar_dense",
    "aten::result_type", "aten::lift_fresh", "aten::set_", "aten::resize_", "aten::view_as", "aten::movedim",
    "aten::unfold", "aten::dropout", "aten::feature_dropout", "aten::lift", "aten::is_nonzero", "aten::_reshape_alias",
    "aten::clone", "aten::new_empty", "aten::new_empty_strided", "aten::new_zeros", "aten::empty_permuted",
    "aten::record_stream", "aten::_has_compatible_shallow_copy_type", "aten::is_same_size", "aten::dim",
    "aten::requires_grad_", "aten::_reshape_copy", "aten::broadcast_tensors", "aten::unsafe_split",
}


def _is_compute(name: str) -> bool:
    return name.startswith("aten::") and name not in STRUCTURAL


def compute_ops(events) -> Counter:
    """The lowest compute ops among profiler events: compute ops with no compute descendant."""
    counts: Counter = Counter()

    def has_compute_descendant(e) -> bool:
        return any(_is_compute(c.name) or has_compute_descendant(c) for c in e.cpu_children)

    for e in events:
        if e.device_type == torch.autograd.DeviceType.CPU and _is_compute(e.name) and not has_compute_descendant(e):
            counts[e.name] += 1
    return counts


MAX_KERNEL_ROWS = 64  # distinct kernels kept per profile (longest device time first)
MAX_KERNEL_NAME = 240


def _kernel_rows(events) -> list[dict]:
    """Every device kernel of a profile, one entry per (full name, launching ATen op or None),
    with ``count`` and ``device_us`` summed, the longest first."""
    launched_by = {}
    for e in events:
        if e.device_type == torch.autograd.DeviceType.CPU and e.name.startswith("aten::"):
            for k in getattr(e, "kernels", None) or []:
                launched_by.setdefault(k.name, e.name)
    rows: dict = {}
    for e in events:
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        op = launched_by.get(e.name)
        r = rows.setdefault((e.name, op), {"name": e.name, "op": op, "count": 0, "device_us": 0.0})
        r["count"] += 1
        r["device_us"] += float(e.time_range.elapsed_us())
    return sorted(rows.values(), key=lambda r: (-r["device_us"], r["name"]))


def kernel_table(events, rows: list[dict] | None = None) -> list[dict]:
    """The device kernels of a profile, one entry per (name, launching op): ``name`` (cut to
    :data:`MAX_KERNEL_NAME` characters), ``op`` (the ATen op that launched it, ``None`` for a kernel
    no ATen op launched: a custom or compiler-generated kernel), ``count`` and ``device_us`` summed.
    At most :data:`MAX_KERNEL_ROWS` entries, the longest first. Used by the fusion analyses."""
    rows = _kernel_rows(events) if rows is None else rows
    return [{**r, "name": r["name"][:MAX_KERNEL_NAME]} for r in rows[:MAX_KERNEL_ROWS]]


def top_kernels(events, n: int = 5, name_chars: int = 120, rows: list[dict] | None = None) -> list[list]:
    """The ``n`` device kernels that took most of the call's device time: ``[[name, share], ...]``
    (what a refinement prompt shows the model; names cut to ``name_chars``)."""
    by_name: Counter = Counter()
    for r in _kernel_rows(events) if rows is None else rows:
        by_name[r["name"][:name_chars]] += r["device_us"]
    total = sum(by_name.values())
    return [[name, round(t / total, 4)] for name, t in by_name.most_common(n)] if total > 0 else []


def kernel_stats(events) -> tuple[int | None, float | None]:
    """(number of device kernels, share of device time in kernels no ATen op launched)."""
    kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    if not kernels:
        return None, None
    total = sum(e.time_range.elapsed_us() for e in kernels)
    # each op's .kernels are the kernels it launched itself, so the sum over ops counts each once
    library = sum(
        k.duration for e in events
        if e.device_type == torch.autograd.DeviceType.CPU and e.name.startswith("aten::")
        for k in (getattr(e, "kernels", None) or [])
    )
    share = max(0.0, min(1.0, 1.0 - library / total)) if total > 0 else None
    return len(kernels), share


@contextlib.contextmanager
def _quiet_stderr():
    """The profiler's native library prints start/stop lines to file descriptor 2; keep them out of
    the user's terminal (and out of a --json consumer's stderr)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


# One profiler session at a time in a process: a batch's judging threads (one per GPU) profile the
# reference and time the eager baseline (whose device clock profiles) at once, and the profiler's
# device tracing (CUPTI) is the process's, not a thread's.
PROFILER = threading.RLock()

SESSION_THREAD = "kbench-profiler"
SESSIONS_ON_ONE_THREAD = True  # False: each thread makes its own sessions (only to compare the two)
_sessions: ThreadPoolExecutor | None = None
_sessions_made = threading.Lock()


def on_session_thread(fn):
    """``fn()`` run on the process's one profiler thread: what it returns, or what it raises. The
    judge's own profiler sessions (the reference's profile, the eager baseline's device clock) go
    through here, so that one thread of the judge's process makes them all, however many judging
    threads it has. Sessions started from several threads of one process are what Kineto's own
    tracker reports crashing (pytorch/pytorch#64795: a segmentation fault in its trace processing;
    its client is bound to the thread that starts it): a judging process with several judging
    threads can die of one inside a session's stop. One session thread does not rule that out in a
    process holding sessions on several GPUs, so a batch over several GPUs also judges each in a
    process of its own (:mod:`kbench_lib.batch.lane_process`). ``fn`` runs with the caller's CUDA device
    current, its grad mode, and on its cores (a judging thread keeps to its GPU's cores). A worker
    (one thread, one session at a time) calls its profiler directly."""
    global _sessions
    if not SESSIONS_ON_ONE_THREAD or threading.current_thread().name.startswith(SESSION_THREAD):
        return fn()
    with _sessions_made:
        if _sessions is None:
            _sessions = ThreadPoolExecutor(max_workers=1, thread_name_prefix=SESSION_THREAD)
    device = torch.cuda.current_device() if torch.cuda.is_initialized() else None
    grad = torch.is_grad_enabled()
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None

    def session():
        if device is not None:
            torch.cuda.set_device(device)
        if cpus is not None:
            cpu_sets.keep_to(cpus)
        with torch.set_grad_enabled(grad):
            return fn()

    return _sessions.submit(session).result()


def on_device(events, device) -> list:
    """``events`` less the device activities of other GPUs: device tracing records every GPU this
    process uses, so another judging thread's kernels show in a profile taken beside them (the
    profiler's CPU ops are recorded for the profiling thread only)."""
    index = _device_index(device)
    if index is None:
        return list(events)
    return [e for e in events if e.device_type != torch.autograd.DeviceType.CUDA or getattr(e, "device_index", index) in (index, -1)]


def _device_index(device) -> int | None:
    """The CUDA index of ``device`` ("cuda" is the current one), None off CUDA."""
    d = torch.device(device)
    if d.type != "cuda":
        return None
    return d.index if d.index is not None else torch.cuda.current_device()


def profile_call(fn, inputs: list, device: str, quiet: bool = True, one_thread: bool = False) -> dict:
    """Profile one call: {'ops': {name: count}, 'n_kernels': int|None, 'custom_kernel_share': float|None,
    'device_us': the kernels' device time summed (None with no kernel), 'kernels': :func:`kernel_table`}.
    ``one_thread``: on the process's profiler thread (:func:`on_session_thread`; the judge's side)."""
    if one_thread:
        return on_session_thread(lambda: profile_call(fn, inputs, device, quiet))
    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    with PROFILER, _quiet_stderr() if quiet else contextlib.nullcontext(), profile(activities=activities) as prof:
        fn(*inputs)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    events = on_device(prof.events(), device)
    n, share = kernel_stats(events)
    rows = _kernel_rows(events)
    return {"ops": dict(compute_ops(events)), "n_kernels": n, "custom_kernel_share": share,
            "device_us": sum(r["device_us"] for r in rows) if n else None,
            "top_kernels": top_kernels(events, rows=rows), "kernels": kernel_table(events, rows=rows)}


def _library_names(reference_kernels: list[dict]) -> Counter:
    """The kernels the reference's ATen ops launched, by (cut) name: how many times each ran, over
    every op that launched it."""
    counts: Counter = Counter()
    for r in reference_kernels:
        if r.get("op") and r.get("count", 0) > 0:
            counts[r["name"]] += r["count"]
    return counts


# Kernels of PyTorch's own code and of NVIDIA's math libraries, known by their (demangled) names: the
# namespaces PyTorch's kernels live in, cuBLAS's and cuBLASLt's names (their internal CUTLASS builds are
# ``cutlass::Kernel2<cutlass_80_tensorop_...>``, a CUTLASS kernel a candidate instantiates is named
# after CUTLASS's templates instead), cuDNN's. A name read as the library's can only lower a
# candidate's own share: a candidate has nothing to gain from naming its kernels so.
LIBRARY_KERNEL = re.compile(
    r"\bat::native::|\bat::cuda::|\bc10::cuda::|\bcublas|\bKernel2?<cutlass_\d+_|^(void )?(sm\d+_xmma_|ampere_|volta_|turing_|"
    r"gemmSN_|gemmk1_kernel|gemv2[NT]_kernel|splitKreduce_kernel)|\bcudnn|\belemWiseRNNcell\b|^(void )?(nchwToNhwc|nhwcToNchw)Kernel")


def library_kernels(reference_kernels: list[dict], candidate_kernels: list[dict]) -> list[bool]:
    """For each of the candidate's kernel rows, whether it is the library's: launched by an ATen op,
    or launched by none but named as a kernel the reference's ATen ops launch, or as PyTorch's or
    NVIDIA's math libraries name theirs (:data:`LIBRARY_KERNEL`). A CUDA-graph replay runs the
    kernels captured from library calls with no op to name them."""
    names = _library_names(reference_kernels)
    return [bool(r.get("op")) or (r.get("name") or "") in names or bool(LIBRARY_KERNEL.search(r.get("name") or ""))
            for r in candidate_kernels]


def unlaunched_library_us(reference_kernels: list[dict], candidate_kernels: list[dict]) -> float:
    """Device time of the candidate's kernels that no ATen op launched in its profile but that are
    the library's (:func:`library_kernels`)."""
    return sum(r["device_us"] for r, lib in zip(candidate_kernels, library_kernels(reference_kernels, candidate_kernels))
               if lib and r.get("op") is None)


def replayed_ops(reference_ops: dict, reference_kernels: list[dict], candidate_kernels: list[dict]) -> dict:
    """The reference's compute ops that the candidate ran as their library kernels with no ATen op
    launching them (a CUDA-graph replay of captured library calls): {op: times the reference's
    count}. An op counts where every kernel the reference's op launched ran, unlaunched by any op
    in the candidate's profile, at least as often as in the reference (times: the fewest whole
    multiples over its kernels). Where some op was run so, the reference's compute ops that launch
    no kernel (``aten::cudnn_is_acceptable``) count too, when the reference's kernel table is whole
    (under :data:`MAX_KERNEL_ROWS` rows; a cut table cannot say an op launched nothing)."""
    ref_counts = _library_names(reference_kernels)
    if not ref_counts:
        return {}
    ran: Counter = Counter()
    for r in candidate_kernels:
        if r.get("op") is None:
            ran[r["name"]] += r["count"]
    by_op: dict[str, list[str]] = {}
    for r in reference_kernels:
        if r["name"] in ref_counts and r.get("op"):
            by_op.setdefault(r["op"], []).append(r["name"])
    out = {}
    for op, n in reference_ops.items():
        names = by_op.get(op)
        if names and n > 0:
            times = min(ran[name] // ref_counts[name] for name in names)
            if times:
                out[op] = times * n
    if out and len(reference_kernels) < MAX_KERNEL_ROWS:
        times = min(out[op] // reference_ops[op] for op in out)
        out.update({op: times * n for op, n in reference_ops.items() if op not in by_op and n > 0})
    return out


def passthrough(reference_ops: dict, candidate_ops: dict) -> list[str]:
    """The reference's compute ops if the candidate ran all of them (as often), else []."""
    if not reference_ops:
        return []
    if all(candidate_ops.get(op, 0) >= n for op, n in reference_ops.items()):
        return sorted(reference_ops)
    return []
