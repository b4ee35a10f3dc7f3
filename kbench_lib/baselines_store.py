"""Stored baselines: per-device parquet files under ``results/baselines/<device-slug>/``.

Rows have at least ``problem`` (``level/stem``), ``mode`` (``eager``, ``compile``, ``cudagraph``),
``precision`` and ``runtime_ms``. The judge looks up the ``compile`` time here, for the device it
runs on, rather than compiling every problem again.
"""
from __future__ import annotations

import functools
from pathlib import Path

from .provenance import device_slug

DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "results" / "baselines"


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
    df = load(device, root)
    if df is None or "runtime_ms" not in df:
        return None
    rows = df[(df["problem"] == problem_key) & (df["mode"] == mode) & (df.get("precision", "fp32") == precision)]
    if "small" in rows:
        rows = rows[rows["small"] != True]  # noqa: E712 - stored rows for SMALL sizes never stand in for full size
    rows = rows[rows["runtime_ms"].notna()]
    return float(rows["runtime_ms"].iloc[-1]) if len(rows) else None


def lookup_compile_ms(problem, device: str, opts) -> float | None:
    if opts.small:  # stored baselines are for full-size configurations
        return None
    return lookup(problem.key, "compile", device, opts.precision, opts.baselines_root)
