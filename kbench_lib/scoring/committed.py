"""Results committed to the repository under ``results/``: what a fresh clone can show without a GPU.

Records: every parquet file git tracks under ``results/`` (outside ``baselines/``) with record
columns: the reference solutions under ``results/solutions/<device>/``, ``torch.compile`` judged as
a model under ``results/compile/<device>/``, and the benchmarks' runs under ``results/benchmarks/``
(``results/runs/`` is where local runs go, and git ignores it). A problem judged again later supersedes its earlier rows
(:func:`latest`). Baselines: the tracked files of ``results/baselines/<device>/``. Only files git
tracks count, so runs written locally (``make run``) never pass for committed ones; outside a git
checkout every file there counts.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from .records import display_name, read_record_files

RESULTS = Path(__file__).resolve().parents[2] / "results"  # beside kbench_lib/
RECORD_COLUMNS = {"problem", "correct", "device", "runtime_ms"}
# one judged candidate: a later row with the same key supersedes an earlier one. strategy is part
# of it (a single run and a refine run of one model both have sample 0, turn 0); run_id is not (a
# later run judging the same candidate again supersedes the earlier one), nor is backend (a
# reference solution rewritten from Triton to CUDA supersedes its old verdict)
KEY = ["model", "strategy", "problem", "device_name", "precision", "small", "sample", "turn"]


def tracked_parquet(folder: str | Path) -> list[Path]:
    """The parquet files under ``folder`` that git tracks (every one there when it is not in a
    git checkout or git is missing)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = sorted(folder.rglob("*.parquet"))
    try:
        r = subprocess.run(["git", "ls-files", "-z", "--", "."], cwd=folder, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return found
    if r.returncode != 0:
        return found
    tracked = {(folder / p).resolve() for p in r.stdout.decode().split("\0") if p}
    return [p for p in found if p.resolve() in tracked]


def _is_records(path: Path) -> bool:
    try:
        return RECORD_COLUMNS <= set(pq.read_schema(path).names)
    except Exception:  # noqa: BLE001 - an unreadable file is not a records file
        return False


def latest(df: pd.DataFrame) -> pd.DataFrame:
    """One row per judged candidate (:data:`KEY`): the one with the latest timestamp."""
    if not len(df):
        return df
    d = df.sort_values("timestamp", kind="stable", na_position="first")
    return d.drop_duplicates([k for k in KEY if k in d], keep="last").sort_values(["level", "problem"]).reset_index(drop=True)


def records(results: str | Path = RESULTS) -> tuple[pd.DataFrame, int]:
    """(the committed records, latest row per candidate; how many earlier rows they superseded).
    Models are named as figures name them (:func:`kbench_lib.scoring.records.display_name`). A published
    corpus's records (``claim_source`` set) are the audit's (:mod:`kbench_lib.analysis.audit`, its
    own figures), not a model of the results figures."""
    results = Path(results)
    baselines = (results / "baselines").resolve()
    files = [p for p in tracked_parquet(results) if baselines not in p.resolve().parents and _is_records(p)]
    every = read_record_files(files)
    every = every[every["claim_source"].isna()].reset_index(drop=True)
    every["model"] = every["model"].map(display_name, na_action="ignore")
    kept = latest(every)
    return kept, len(every) - len(kept)


def baselines(results: str | Path = RESULTS) -> pd.DataFrame:
    """Every committed baseline row (all devices), as ``kbench baselines`` wrote them."""
    files = tracked_parquet(Path(results) / "baselines")
    if not files:
        return pd.DataFrame(columns=["problem", "level", "mode", "runtime_ms", "sol_ms", "device_name", "date"])
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
