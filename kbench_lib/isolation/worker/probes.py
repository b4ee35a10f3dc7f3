"""What the worker's process looks like from inside: its threads, the processes it started and
their CPU time, the global numerics settings, whether a CUDA context still runs work; and the
runtime's own threads started before any of that is counted."""
from __future__ import annotations

import os
import threading

import torch

from ...measure import profiling


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _settings() -> dict:
    """The global numerics settings a candidate must not change (threat #16, #17)."""
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
    """Processes this one started that are still alive (threat #12: work outside the window)."""
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
    counted, so that only threads the candidate leaves behind show (threat #12)."""
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
