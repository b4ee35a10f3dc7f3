"""How long a small batch takes as a user runs it: one `kbench run` process, at the CLI's defaults,
from the command's start to its exit. The batch is the throughput target's three 8192x8192 problems
(ReLU in CUDA, GELU and row softmax in Triton: benchmarks/fixtures), judged once from an empty build
cache and reference store (``cold3``), then again as fresh processes with both warm (``warm3``: the
candidates prebuilt, as a user's second batch finds them).

    python benchmarks/batch_start.py --device cuda --repeat 3 [--serve auto] --out results/benchmarks/<device>/batch-start-<date>.json

``--serve auto`` (the CLI's default): the commands run in the judge service (docs/SERVICE.md), which
the cold batch starts and the warm ones find; it is stopped at the end. ``off``: each command in its
own process, as with ``KBENCH_SERVE=off``.

Each row: ``batch``, ``options`` ("defaults"), ``serve``, ``wall_s`` (the process, start to exit),
``first_verdict_s`` (the process's start to its first record), ``judge_s`` and ``queue_s`` per
candidate, how many were correct, the device, the commit and the command. Beside them, the seconds
the interpreter takes to import torch and the CLI alone (``import_s``): the part of the start no
judging can shorten. Not a test: prints one line per run and writes JSON.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kbench_lib.core.provenance import git_sha  # noqa: E402
from kbench_lib.scoring.records import read_records  # noqa: E402

FIX = REPO / "benchmarks" / "fixtures"
BATCH = {"1_ReLU_8192": "relu_cuda.py", "2_GELU_8192": "gelu_triton.py", "3_Softmax_Rows_8192": "softmax_triton.py"}


def lay_out(root: Path) -> tuple[Path, Path]:
    """The batch's problem folder and candidate folder (a ``folder:`` model) under ``root``."""
    problems, cands = root / "problems" / "level1", root / "cands"
    problems.mkdir(parents=True)
    cands.mkdir()
    for stem, cand in BATCH.items():
        shutil.copy(FIX / "problems" / "level1" / f"{stem}.py", problems / f"{stem}.py")
        shutil.copy(FIX / "candidates" / cand, cands / f"{stem}.py")
    return problems.parent, cands


def command(problems: Path, cands: Path, device: str, runs: Path, run_id: str) -> list[str]:
    return [sys.executable, "-m", "kbench_lib.cli", "run", str(problems), "--model", f"folder:{cands}", "--device", device,
            "--run-id", run_id, "--runs-root", str(runs), "--quiet"]


def one_batch(cmd: list[str], env: dict, runs: Path, run_id: str) -> dict:
    """One process of the batch: its wall time and what its records say."""
    started_wall = dt.datetime.now(dt.timezone.utc)
    t0 = time.monotonic()
    done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"the batch failed (exit {done.returncode}): {done.stderr[-3000:]}")
    df = read_records(runs, run_id).sort_values("timestamp")
    first = (df["timestamp"].iloc[0].to_pydatetime() - started_wall).total_seconds() if len(df) else None
    return {"wall_s": round(wall, 2), "first_verdict_s": round(first, 2) if first is not None else None,
            "judged": len(df), "correct": int(df["correct"].sum()),
            **{column: _per_problem(df, column) for column in ("judge_s", "queue_s", "build_s")},
            "stages_s": {p: _stages(st) for p, st in zip(df["problem"], df["judge_stages"])},
            "device_name": df["device_name"].iloc[0] if len(df) else None}


def _per_problem(df, column: str) -> dict:
    """``column`` by problem, in seconds to two places (None where a record has none)."""
    return {p: (None if pd.isna(x) else round(float(x), 2)) for p, x in zip(df["problem"], df[column])}


def _stages(stages) -> dict:
    """A record's top-level judge stages (``run_start``, ``baseline``, ...), seconds to two places."""
    pairs = dict(stages) if isinstance(stages, (list, tuple, dict)) else {}
    return {k: round(float(v), 2) for k, v in pairs.items() if "." not in k and v is not None}


def import_seconds(env: dict, repeat: int = 3) -> float:
    """The median seconds of a fresh interpreter importing torch and the CLI (its own start included)."""
    times = []
    for _ in range(repeat):
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-c", "import torch, kbench_lib.cli"], env=env, cwd=REPO, check=True)
        times.append(time.monotonic() - t0)
    return round(statistics.median(times), 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--repeat", type=int, default=3, help="warm batches after the cold one")
    ap.add_argument("--serve", choices=["off", "auto"], default="auto", help="KBENCH_SERVE for the batches (docs/SERVICE.md)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kbench-batch-start-"))
    env = {**os.environ, "KBENCH_CACHE": str(root / "cache"), "PYTHONPATH": str(REPO), "KBENCH_SERVE": a.serve}
    problems, cands = lay_out(root)
    runs = root / "runs"
    rows = []
    base = {"options": "defaults", "serve": a.serve, "git_sha": git_sha(), "import_s": import_seconds(env)}
    for i in range(a.repeat + 1):
        run_id = f"batch-{i}"
        cmd = command(problems, cands, a.device, runs, run_id)
        row = {"batch": "cold3" if i == 0 else "warm3", **base, **one_batch(cmd, env, runs, run_id),
               "command": "kbench run <3 problems> --model folder:<3 candidates> --device " + a.device}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if a.serve == "auto":  # the service the cold batch started: its key is this benchmark's cache, no one else's
        status = subprocess.run([sys.executable, "-m", "kbench_lib.cli", "serve", "--status"], env=env, cwd=REPO,
                                capture_output=True, text=True)
        print("service:", status.stdout.strip(), flush=True)  # its fork servers' start, phase by phase
        subprocess.run([sys.executable, "-m", "kbench_lib.cli", "serve", "--stop"], env=env, cwd=REPO, capture_output=True)
    warm = [r["wall_s"] for r in rows if r["batch"] == "warm3"]
    if warm:
        print(f"warm3: median {statistics.median(warm):.1f} s from the command's start to its exit "
              f"(import alone {base['import_s']:.1f} s); cold3 {rows[0]['wall_s']:.1f} s")
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(rows, indent=1))
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
