"""Stored baselines: per-device parquet files under ``results/baselines/<device-slug>/``, one per
(mode, precision, size, problem), named by :func:`file_name` (``kbench_lib.judging.baselines`` writes them).

Rows have at least ``problem`` (``level/stem``), ``mode`` (``eager``, ``compile``, ``cudagraph``),
``precision`` and ``runtime_ms``. The judge looks up the ``compile`` time here, for the device it
runs on, rather than compiling every problem again. A lookup reads the one file its row is written
to: reading the whole folder (about 800 files for one device) takes 4-6 s, which every judging
process would pay in its first judgement (inside its ``compile`` measurement). :func:`load` reads
them all, for analyses.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

from ..core.provenance import device_slug

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "results" / "baselines"


def file_name(problem_key: str, mode: str, precision: str, small: bool = False) -> str:
    """The file that holds the row of one (problem, mode, precision, size)."""
    key = re.sub(r"[^A-Za-z0-9_.-]+", "__", problem_key)
    return f"{mode}-{precision}{'-small' if small else ''}-{key}.parquet"


@functools.lru_cache(maxsize=8)
def _table(folder: str):
    import pandas as pd

    files = sorted(Path(folder).glob("*.parquet"))
    if not files:
        return None
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


def load(device: str, root: str | Path | None = None):
    """The stored baselines for ``device`` as a DataFrame, or None."""
    folder = Path(root or DEFAULT_ROOT) / device_slug(device)
    return _table(str(folder)) if folder.is_dir() else None


def lookup(problem_key: str, mode: str, device: str, precision: str = "fp32", root: str | Path | None = None) -> float | None:
    """The stored full-size ``runtime_ms`` of ``problem_key`` in ``mode`` on ``device``, or None."""
    path = Path(root or DEFAULT_ROOT) / device_slug(device) / file_name(problem_key, mode, precision)
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return None
    rows = [r for r in _rows(str(path), stamp)
            if r.get("problem") == problem_key and r.get("mode") == mode and r.get("precision", "fp32") == precision
            and r.get("small") is not True and r.get("runtime_ms") is not None]
    return float(rows[-1]["runtime_ms"]) if rows else None


@functools.lru_cache(maxsize=1024)
def _rows(path: str, stamp: int) -> list[dict]:
    """One file's rows (``stamp``: its modification time, so a file written again is read again)."""
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def lookup_compile_ms(problem, device: str, opts) -> float | None:
    if opts.small:  # stored baselines are for full-size configurations
        return None
    return lookup(problem.key, "compile", device, opts.precision, opts.baselines_root)
