"""Which CPU cores each GPU's candidates run on, when a batch judges on several GPUs at once.

On one GPU a candidate's worker has every core the judge may use. On several, each GPU's workers
would otherwise start their thread pools, draw their inputs and run their CPU work over the same
cores, and a worker's start (drawing the input sets, starting torch's thread pools, a profiler
session; creating the CUDA context is not affected) takes 20-30% longer with two GPUs judging than
with one. So each GPU's fork server (and every worker forked from it:
:mod:`kbench_lib.isolation.forkserver` applies ``KBENCH_CPUS`` before it imports torch, so torch's thread
pools are sized to the set) is given its own cores: the cores local to the GPU (its NUMA node,
from sysfs) where the GPUs have different ones, and the judge's cores split evenly, in contiguous
runs, among GPUs that share theirs. Each GPU's judging thread keeps to its GPU's set as well
(:func:`kbench_lib.isolation.server_pool.pin_thread`), so the judge's own work for one GPU never lands on
the cores where another GPU's candidate is timed. No set is given (nothing is pinned) on one GPU, off Linux, or
where a share would be under ``MIN_CORES``.
"""
from __future__ import annotations

import os
from pathlib import Path

ENV = "KBENCH_CPUS"
MIN_CORES = 2
_SYSFS = Path("/sys/bus/pci/devices")
_NVIDIA = "0x10de"  # the PCI vendor id of NVIDIA


def parse_cpulist(text: str) -> set[int]:
    """``0-3,8,10-11`` (the kernel's cpulist format) as a set of core numbers."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def format_cpulist(cpus) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def allowed_cpus() -> set[int]:
    """The cores this process may run on: its main thread's (a batch's judging threads keep to
    their GPU's cores; the main thread never does)."""
    try:
        return set(os.sched_getaffinity(os.getpid()))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def keep_to(cpus) -> set[int] | None:
    """Keeps the calling thread (in a process of one thread: the process, and what it forks later)
    on ``cpus`` (cores, or a cpulist), those of the process it may use; None (every core of the
    process) or a set that leaves none: on every core of the process. The cores it keeps to, or
    None where it could not be pinned."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    try:
        allowed = allowed_cpus()
        wanted = parse_cpulist(cpus) if isinstance(cpus, str) else set(cpus or ())
        kept = (wanted & allowed) or allowed
        os.sched_setaffinity(0, kept)
        return kept
    except (OSError, ValueError):
        return None


def pci_address(device: str) -> str | None:
    """``device``'s PCI address as sysfs names it (``0000:3b:00.0``), from torch (None where unknown)."""
    try:
        import torch

        props = torch.cuda.get_device_properties(torch.device(device))
        domain, bus, dev = (getattr(props, f"pci_{k}_id", None) for k in ("domain", "bus", "device"))
    except Exception:  # noqa: BLE001 - no CUDA, or a torch without these fields
        return None
    if bus is None or dev is None:
        return None
    return f"{domain or 0:04x}:{bus:02x}:{dev:02x}.0"


def _local_cpulist(folder: Path) -> set[int] | None:
    try:
        return parse_cpulist((folder / "local_cpulist").read_text()) or None
    except (OSError, ValueError):
        return None


def local_cpus(device: str) -> set[int] | None:
    """The cores of ``device``'s NUMA node, from sysfs (None where unknown)."""
    address = pci_address(device)
    return _local_cpulist(_SYSFS / address) if address else None


def host_gpus(root: Path = _SYSFS) -> dict[str, set[int] | None]:
    """Every NVIDIA GPU of this host (PCI vendor 0x10de, a display or 3D controller) by PCI
    address, with the cores local to it (None where sysfs gives none), from sysfs."""
    gpus: dict[str, set[int] | None] = {}
    try:
        folders = sorted(root.iterdir())
    except OSError:
        return gpus
    for folder in folders:
        try:
            vendor = (folder / "vendor").read_text().strip().lower()
            klass = (folder / "class").read_text().strip().lower()
        except OSError:
            continue
        if vendor == _NVIDIA and klass.startswith("0x03"):
            gpus[folder.name] = _local_cpulist(folder)
    return gpus


def host_share(device: str, root: Path = _SYSFS) -> tuple[int, ...] | None:
    """The cores ``device`` gets when this host's cores are shared among all its GPUs as a batch on
    every one of them shares them (:func:`split`), for a judge that sees one GPU of several (a Ray
    actor, given its GPU through ``CUDA_VISIBLE_DEVICES``): the judges of the other GPUs do the
    same, so each GPU's workers keep to cores of their own. None on a host of one GPU, off Linux,
    where the GPU is not found, or where a share would be under ``MIN_CORES``."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    address = pci_address(device)
    gpus = host_gpus(root)
    if address is None or address not in gpus or len(gpus) < 2:
        return None
    return split(sorted(gpus), gpus, allowed_cpus()).get(address)


def split(devices: list[str], local: dict[str, set[int] | None], allowed: set[int]) -> dict[str, tuple[int, ...]]:
    """Each device's cores: its local ones (within ``allowed``), shared evenly, in contiguous runs,
    with the other devices that have the same; {} where any share would be under ``MIN_CORES``."""
    if len(devices) < 2:
        return {}
    groups: dict[tuple[int, ...], list[str]] = {}
    for d in devices:
        cores = tuple(sorted((local.get(d) or allowed) & allowed)) or tuple(sorted(allowed))
        groups.setdefault(cores, []).append(d)
    out: dict[str, tuple[int, ...]] = {}
    for cores, members in groups.items():
        share = len(cores) // len(members)
        if share < MIN_CORES:
            return {}
        for i, d in enumerate(members):
            out[d] = cores[i * share:(i + 1) * share]
    return out


def gpu_cpu_sets(devices: list[str]) -> dict[str, tuple[int, ...]]:
    """{device: its workers' cores} for a batch judging on ``devices`` at once ({}: none pinned)."""
    if len(devices) < 2 or not all(d.startswith("cuda") for d in devices) or not hasattr(os, "sched_setaffinity"):
        return {}
    return split(devices, {d: local_cpus(d) for d in devices}, allowed_cpus())


def apply_from_env() -> None:
    """In a fork server, before torch is imported: keeps this process (and every worker forked
    from it) on the cores ``KBENCH_CPUS`` names, those it may use at all."""
    if os.environ.get(ENV):
        keep_to(os.environ[ENV])


def pin_process(cpulist: str | None) -> None:
    """In a fork server forked with torch already imported (:func:`kbench_lib.isolation.forkserver.zygote`):
    keeps it (and every worker it forks) on ``cpulist``, those it may use at all, and sizes torch's
    thread pool to them, as :func:`apply_from_env` before the import does. None: as it is."""
    cpus = keep_to(cpulist) if cpulist else None
    if not cpus:
        return
    os.environ[ENV] = format_cpulist(cpus)
    import torch

    torch.set_num_threads(len(cpus))


__all__ = ["ENV", "keep_to", "pin_process", "gpu_cpu_sets", "split", "parse_cpulist", "format_cpulist", "apply_from_env", "local_cpus",
           "pci_address", "host_gpus", "host_share"]
