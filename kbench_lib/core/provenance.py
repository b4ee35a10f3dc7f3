"""Where a number came from: device, driver, library versions, code version."""
from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
from pathlib import Path

import torch


def resolve_device(device: str | None) -> str:
    """``auto`` (or None) picks ``cuda`` when a GPU is visible, else ``cpu``."""
    if device in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for, but torch sees no CUDA device here")
    return device


def device_name(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return platform.processor() or platform.machine() or "cpu"


def device_slug(device: str) -> str:
    """A folder-friendly device name, e.g. ``nvidia-h100-80gb-hbm3`` or ``cpu-x86_64``."""
    return slug(device_name(device) if device.startswith("cuda") else f"cpu-{platform.machine()}")


def slug(name: str) -> str:
    """A device name as a folder name: ``NVIDIA H200`` -> ``nvidia-h200``."""
    return re.sub(r"[^a-z0-9_]+", "-", name.lower()).strip("-")


@functools.lru_cache(maxsize=None)
def driver_version() -> str | None:
    try:
        r = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        )
        return r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return None


@functools.lru_cache(maxsize=None)
def git_sha(repo: str | None = None) -> str | None:
    if os.environ.get("KBENCH_GIT_SHA"):  # a copy of the tree without .git (e.g. a GPU machine)
        return os.environ["KBENCH_GIT_SHA"]
    repo = repo or str(Path(__file__).resolve().parents[2])  # kbench_lib/core/provenance.py
    try:
        r = subprocess.run(["git", "-C", repo, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=10)
        return r.stdout.strip() or None if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def triton_version() -> str | None:
    try:
        import triton

        return triton.__version__
    except Exception:  # noqa: BLE001 - triton is optional
        return None


def environment(device: str) -> dict:
    return {
        "device_name": device_name(device),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "triton_version": triton_version(),
        "driver": driver_version() if device.startswith("cuda") else None,
        "git_sha": git_sha(),
        "python_version": platform.python_version(),
    }


def host_memory() -> int:
    """This machine's memory, or its cgroup's limit where that is lower (a container's)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 16 << 30
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total
