"""The reference solutions of the problems every backend has one for, judged on a GPU: one row per
(backend, problem), so a reader sees each kernel language correct, trusted and timed on the same device.

    python benchmarks/backends.py --device cuda --out results/benchmarks/<device>/backends-<date>.json

The problems are an elementwise op, a row softmax and a GEMM (``PROBLEMS``); every solution file of
theirs under problems/solutions/ is judged (CUDA, Triton, CuTe DSL, TileLang), at the CLI's defaults,
by one ``kbench run --model reference`` process. A backend whose package is missing is judged all the
same and its rows say why (``failure``, ``message``). Each row: ``backend``, ``problem``, ``correct``,
``trusted`` (correct and no flag of class cheat, strict policy), ``flags``, ``speedup_eager``,
``runtime_ms``, ``baseline_eager_ms``, ``failure``, ``device_name``, the commit and the command.
Not a test: prints one line per row and writes JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kbench_lib.core.provenance import git_sha  # noqa: E402
from kbench_lib.scoring.flags import trusted  # noqa: E402
from kbench_lib.scoring.records import read_records  # noqa: E402

PROBLEMS = ("level1/51_ReLU", "level1/87_Softmax_LastDim", "level1/1_Square_Matmul")


def _number(x):
    return None if x is None or x != x else float(x)


def rows_of(df) -> list[dict]:
    out = []
    for _, r in df.sort_values(["problem", "backend"]).iterrows():
        flags = list(r["flags"]) if r["flags"] is not None else []
        out.append({"backend": r["backend"], "problem": r["problem"], "correct": bool(r["correct"]),
                    "trusted": bool(trusted(r["correct"], flags)), "flags": flags,
                    "speedup_eager": _number(r["speedup_eager"]), "runtime_ms": _number(r["runtime_ms"]),
                    "baseline_eager_ms": _number(r["baseline_eager_ms"]), "failure": r["failure"] if isinstance(r["failure"], str) else None,
                    "message": r["message"][:400] if isinstance(r["message"], str) and r["message"] else None, "device_name": r["device_name"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    runs = Path(tempfile.mkdtemp(prefix="kbench-backends-"))
    cmd = [sys.executable, "-m", "kbench_lib.cli", "run", str(REPO / "problems"), "--model", "reference",
           "--device", a.device, "--filter", *PROBLEMS, "--run-id", "backends", "--runs-root", str(runs), "--quiet"]
    # one command in its own process: nothing for a judge service to keep warm, and none left behind
    done = subprocess.run(cmd, cwd=REPO, env={**os.environ, "KBENCH_SERVE": "off"})
    rows = rows_of(read_records(str(runs), "backends"))
    command = "kbench run problems --model reference --device " + a.device + " --filter " + " ".join(PROBLEMS)
    for row in rows:
        row.update(git_sha=git_sha(), command=command)
        print(json.dumps({k: row[k] for k in ("backend", "problem", "correct", "trusted", "speedup_eager", "failure")}), flush=True)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(rows, indent=1))
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
