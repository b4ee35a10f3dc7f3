"""Which records an analysis reads, and how it says that there is nothing to show.

Records come from local runs (``results/runs/<run_id>/records``, what ``make run`` and ``kbench run``
write) and from the results committed to the repository (:mod:`kbench_lib.scoring.committed`). A ``source``
column says which. Analyses that need a column or rows the records lack raise :class:`NoData` with a
sentence a reader understands; notebooks print it where the section would be.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..scoring import committed as committed_results
from ..scoring.records import SCHEMA, read_records
from ..batch.runner import RUNS_ROOT


class NoData(LookupError):
    """There is nothing to compute: the message says what is missing and how to get it."""


def local_runs(runs_root: str | Path | None = None) -> list[str]:
    """Run ids with records under ``runs_root`` (default ``results/runs``), oldest first by name."""
    root = Path(runs_root or RUNS_ROOT)
    return sorted(p.parent.name for p in root.glob("*/records") if any(p.glob("part-*.parquet")))


def load(runs_root: str | Path | None = None, run_ids=None, committed: bool = True, committed_root=None, local: bool = True) -> pd.DataFrame:
    """Records of the local runs ``run_ids`` (every run under ``runs_root`` when None or empty; none
    without ``local``) and, with ``committed``, the committed results. Both keep the latest row per
    candidate (:func:`kbench_lib.scoring.committed.latest`: over all committed rows, and within each local
    run, so that two local runs stay two sets of samples). A run whose records git tracks (``results/runs/<id>/``) is committed: with
    ``committed`` its id is skipped among the local runs, so its rows are read once.
    Column ``source``: ``local`` or ``committed``."""
    root = Path(runs_root or RUNS_ROOT)
    ids = [] if not local else (list(run_ids) if run_ids else local_runs(root))
    parts = []
    if committed:
        rows, _ = committed_results.records(committed_root or committed_results.RESULTS)
        if len(rows) and "run_id" in rows:
            seen = set(rows["run_id"].dropna().astype(str))
            ids = [r for r in ids if str(r) not in seen]
        parts.append(rows.assign(source="committed"))
    own = [p for p in (read_records(root, r) for r in ids) if len(p)]
    if own:  # the latest row per candidate within each run: separate local runs are separate samples
        parts.insert(0, pd.concat([committed_results.latest(p) for p in own], ignore_index=True).assign(source="local"))
    parts = [p for p in parts if len(p)]
    if not parts:
        return SCHEMA.empty_table().to_pandas().assign(source=pd.Series(dtype=object))
    return pd.concat(parts, ignore_index=True)


def describe(df: pd.DataFrame) -> str:
    """One line per source: how many verdicts, runs, models, problems and devices the rows hold."""
    if not len(df):
        return "No records: run `make run` (or `kbench run ...`) for local records; committed results live under results/."
    lines = []
    for source, g in df.groupby("source", sort=False) if "source" in df else [("records", df)]:
        devices = ", ".join(sorted(g["device_name"].dropna().astype(str).unique())) or "device not recorded"
        lines.append(f"{source}: {len(g)} verdicts, {g['run_id'].nunique()} run(s), {g['model'].nunique()} model(s), "
                     f"{g['problem'].nunique()} problem(s) on {devices}")
    return "\n".join(lines)


def present(df: pd.DataFrame, column: str) -> bool:
    """The column exists and holds at least one value."""
    return column in df and bool(df[column].notna().any())


def require(df: pd.DataFrame, columns=(), what: str = "this analysis", hint: str = "") -> None:
    """Raises :class:`NoData` unless there are rows and each column is present with a value."""
    if not len(df):
        raise NoData(f"no data for {what}: no records" + (f" ({hint})" if hint else ""))
    missing = [c for c in columns if not present(df, c)]
    if missing:
        raise NoData(f"no data for {what}: the records have no {', '.join(missing)} values" + (f" ({hint})" if hint else ""))


def report(fn, *args, **kwargs):
    """Calls ``fn``; on :class:`NoData` prints its message and returns None (for notebook cells)."""
    try:
        return fn(*args, **kwargs)
    except NoData as e:
        print(str(e)[:1].upper() + str(e)[1:] + ".")
        return None
