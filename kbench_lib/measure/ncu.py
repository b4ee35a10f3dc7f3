"""Running Nsight Compute (ncu) and reading the kernel durations it reports.

Why: the judge's clocks (CUDA events around a call, and the device-busy sum of the call's kernel
durations from CUPTI) are the numbers every verdict rests on. They are checked against the GPU's
own counter, ``gpu__time_duration.sum`` as Nsight Compute reads it, on kernels of known sizes
(benchmarks/timing_fidelity.py). ncu runs with ``--clock-control none`` because the judge does not
lock clocks either (ncu locks them to base by default, which would compare two different GPUs),
and ``--cache-control all`` because the judge flushes L2 before every trial. Only kernels launched
inside a push/pop NVTX range of a given name are profiled, so set-up work is left out.

Pure Python, importable without a GPU: building the command line and parsing ``--csv`` output.
"""
from __future__ import annotations

import csv
import glob
import os
import shutil

METRIC = "gpu__time_duration.sum"
# the kernel table's header; with --nvtx, NVTX range columns sit between "Host Name" and "Kernel Name"
HEADER_START = '"ID","Process ID","Process Name","Host Name",'
UNIT_NS = {
    "ns": 1.0, "nsecond": 1.0, "nanosecond": 1.0,
    "us": 1e3, "usecond": 1e3, "microsecond": 1e3,
    "ms": 1e6, "msecond": 1e6, "millisecond": 1e6,
    "s": 1e9, "second": 1e9,
}


def available() -> str | None:
    """Path of the ncu executable, or None: PATH first, then the usual install places."""
    found = shutil.which("ncu")
    if found:
        return found
    candidates = ["/usr/local/cuda/bin/ncu", *sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)]
    return next((p for p in candidates if os.path.isfile(p) and os.access(p, os.X_OK)), None)


def ncu_command(python_argv: list[str], *, nvtx_range: str = "kbench_fid", extra: list[str] = (), exe: str | None = None) -> list[str]:
    """The ncu command line that profiles every kernel launched inside the push/pop NVTX range
    ``nvtx_range`` (the trailing slash in ``--nvtx-include`` selects push/pop ranges) of the program
    ``python_argv``, reporting one duration per kernel as CSV on stdout. ``extra`` are further ncu
    options; ``exe`` defaults to :func:`available`, else plain ``ncu``."""
    return [
        exe or available() or "ncu", "--clock-control", "none", "--cache-control", "all", "--metrics", METRIC,
        "--csv", "--nvtx", "--nvtx-include", f"{nvtx_range}/", "--target-processes", "all", *extra, *python_argv,
    ]


def _to_ns(value: str, unit: str) -> float:
    factor = UNIT_NS.get(unit.strip().lower())
    if factor is None:
        raise ValueError(f"unknown time unit {unit!r} in ncu output (value {value!r})")
    try:
        return float(value.strip().replace(",", "")) * factor
    except ValueError:
        raise ValueError(f"not a number in ncu output: {value!r} {unit!r}") from None


def parse_gpu_time_csv(text: str, metric: str = METRIC) -> list[dict]:
    """One ``{"id", "kernel", "ns"}`` per profiled kernel launch, in ID order, from ncu ``--csv``
    output. Lines that are not rows of the kernel table (``==PROF==`` logs, the program's own
    output, a repeated header) are ignored. Raises ValueError when no table is found, when it has
    no row for ``metric``, or when a row cannot be read."""
    header: list[str] | None = None
    found: dict[int, dict] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(HEADER_START) and '"Kernel Name"' in line:
            header = next(csv.reader([line]))
            missing = {"ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"} - set(header)
            if missing:
                raise ValueError(f"ncu CSV header lacks columns {sorted(missing)}: {line[:300]}")
            continue
        if header is None or not line.startswith('"'):
            continue
        try:
            cells = next(csv.reader([line]))
        except (csv.Error, StopIteration):
            continue
        if len(cells) != len(header):
            continue
        row = dict(zip(header, cells))
        try:
            kid = int(row["ID"].replace(",", ""))
        except ValueError:
            continue
        if row["Metric Name"] != metric:
            continue
        if kid in found:
            raise ValueError(f"ncu CSV has two {metric} rows for kernel ID {kid}")
        found[kid] = {"id": kid, "kernel": row["Kernel Name"], "ns": _to_ns(row["Metric Value"], row["Metric Unit"])}
    if header is None:
        head = " | ".join(text.strip().splitlines()[:5])[:500]
        raise ValueError(f"no ncu CSV table found (no line starting with {HEADER_START}); output began: {head!r}")
    if not found:
        raise ValueError(f"ncu CSV table has no rows with Metric Name {metric!r}")
    return [found[k] for k in sorted(found)]


def per_call_ns(kernels: list[dict], kernels_per_call: int) -> list[float]:
    """Sums of consecutive groups of ``kernels_per_call`` launches: the device time of each call."""
    if kernels_per_call < 1:
        raise ValueError(f"kernels_per_call must be >= 1, got {kernels_per_call}")
    if len(kernels) % kernels_per_call:
        raise ValueError(f"{len(kernels)} kernel launches are not a multiple of {kernels_per_call} kernels per call")
    return [sum(k["ns"] for k in kernels[i:i + kernels_per_call]) for i in range(0, len(kernels), kernels_per_call)]
