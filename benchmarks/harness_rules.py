"""What each harness does that its written rules do not say, measured on the benchmark's references.

    python benchmarks/harness_rules.py --out-dir results/benchmarks                  # on a GPU, full size
    python benchmarks/harness_rules.py --device cpu --small --limit 5 --out-dir /tmp  # a check of the script

For every problem (``problems/level1..3`` unless given), on one input set of its declared shape:

- ``mode_tol``: ``tol_needed`` of the reference in eval mode against training mode, both under
  ``no_grad`` (CUDA-L1's harness switched both models to eval mode; KernelBench builds them in
  training mode). Over :data:`kbench_lib.judging.modes.DEPENDS_TOL` the reference depends on
  ``training`` and the two harnesses ask for different outputs; ``mode_dependent`` says so.
- ``cudnn_tf32_tol``: ``tol_needed`` of the reference run with PyTorch's default numerics (cuDNN's
  TF32 on, cuBLAS's off), which upstream's harness and CUDA-L1's leave as they are, against the
  reference with TF32 off everywhere (kbench's rule for both sides). Over 1e-4, upstream's fp32
  tolerance, a kernel that computes in exact fp32 fails upstream's check on that problem by the
  reference's own error; ``fails_fp32_by_reference`` says so.
- ``matmul_tf32_tol``: the same with cuBLAS's TF32 on as well (``torch.set_float32_matmul_precision
  ("high")``, which published harnesses sometimes set), for comparison.

One JSON object goes to ``<out-dir>/<device-slug>/harness-rules-<date>.json``: the device, commit and
command (``KBENCH_GIT_SHA`` names the commit where the tree has no ``.git``), a summary per level (problems, mode-dependent, failing fp32 by the reference's TF32 error,
their names) and a row per problem.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from tqdm import tqdm  # noqa: E402

from kbench_lib.judging.modes import DEPENDS_TOL  # noqa: E402
from kbench_lib.measure.compare import measure_outputs  # noqa: E402
from kbench_lib.core.provenance import device_name, device_slug, resolve_device  # noqa: E402
from kbench_lib.suite.problems import discover  # noqa: E402
from kbench_lib.suite.reference import build_reference, in_mode, set_flags  # noqa: E402

UPSTREAM_FP32_TOL = 1e-4


def _outputs(out) -> list:
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    return [o.detach().float().clone() if isinstance(o, torch.Tensor) else o for o in outs]


def _run(model, inputs, mode: str, cudnn_tf32: bool = False, matmul_tf32: bool = False) -> list:
    set_flags()
    torch.backends.cudnn.allow_tf32 = cudnn_tf32
    torch.backends.cuda.matmul.allow_tf32 = matmul_tf32
    try:
        with torch.no_grad(), in_mode(model, mode):
            return _outputs(model(*inputs))
    finally:
        set_flags()


def _tol(expected: list, got: list, device: str) -> float | None:
    m = measure_outputs(expected, got, device=device if device.startswith("cuda") else None)
    return None if m.hard is not None or m.tol_needed is None else float(m.tol_needed)


def measure(problem, device: str, small: bool, seed: int) -> dict:
    """One problem's row (module docstring)."""
    config = problem.declared_configs(small=small)[0]
    row = {"problem": problem.key, "level": problem.level, "tags": list(problem.tags)}
    if problem.task != "forward":
        return {**row, "skipped": "backward task"}
    t0 = time.monotonic()
    try:
        model, _, inputs = build_reference(problem, config, seed, seed + 1, device)
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        train = _run(model, inputs, "train")
        model.load_state_dict(state)  # training mode moved the running statistics
        evald = _run(model, inputs, "eval")
        exact = _run(model, inputs, "eval")  # eval mode: no state moves, no randomness
        cudnn = _run(model, inputs, "eval", cudnn_tf32=True)
        both = _run(model, inputs, "eval", cudnn_tf32=True, matmul_tf32=True)
    except Exception as e:  # noqa: BLE001 - a problem that does not run here is a row that says why
        return {**row, "error": f"{type(e).__name__}: {str(e)[:300]}"}
    mode = _tol(train, evald, device)
    row.update(
        mode_tol=mode, mode_dependent=mode is None or mode > DEPENDS_TOL,
        cudnn_tf32_tol=_tol(exact, cudnn, device), matmul_tf32_tol=_tol(exact, both, device),
        seconds=round(time.monotonic() - t0, 3),
    )
    row["fails_fp32_by_reference"] = row["cudnn_tf32_tol"] is not None and row["cudnn_tf32_tol"] > UPSTREAM_FP32_TOL
    del model, inputs
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return row


def summarise(rows: list[dict]) -> dict:
    out = {}
    for level in sorted({r["level"] for r in rows}):
        rs = [r for r in rows if r["level"] == level and "mode_tol" in r]
        out[level] = {
            "problems": len(rs),
            "errors": [r["problem"] for r in rows if r["level"] == level and "error" in r],
            "mode_dependent": sum(r["mode_dependent"] for r in rs),
            "mode_dependent_problems": [r["problem"] for r in rs if r["mode_dependent"]],
            "fails_fp32_by_reference": sum(r["fails_fp32_by_reference"] for r in rs),
            "fails_fp32_by_reference_problems": [r["problem"] for r in rs if r["fails_fp32_by_reference"]],
            "cudnn_tf32_tol_max": max((r["cudnn_tf32_tol"] for r in rs if r["cudnn_tf32_tol"] is not None), default=None),
        }
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("problems", nargs="*", default=[str(REPO / "problems" / f"level{i}") for i in (1, 2, 3)])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--small", action="store_true", help="SMALL configurations (a check of the script on the CPU)")
    ap.add_argument("--limit", type=int, default=None, help="this many problems per folder")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out-dir", default=str(REPO / "results" / "benchmarks"))
    a = ap.parse_args(argv)
    device = resolve_device(a.device)
    problems = []
    for folder in a.problems:
        found = discover(folder)
        problems += found[: a.limit] if a.limit else found
    started = time.monotonic()
    rows = [measure(p, device, a.small, a.seed) for p in tqdm(problems, desc="harness rules", unit="problem")]
    sha = os.environ.get("KBENCH_GIT_SHA") or subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                                            text=True).stdout.strip()
    name = device_name(device)
    result = {
        "device_name": name, "device": device, "small": a.small, "git_sha": sha, "torch": torch.__version__,
        "date": dt.date.today().isoformat(), "wall_s": round(time.monotonic() - started, 1),
        "command": "python benchmarks/harness_rules.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "depends_tol": DEPENDS_TOL, "upstream_fp32_tol": UPSTREAM_FP32_TOL,
        "summary": summarise(rows), "rows": rows,
    }
    out = Path(a.out_dir) / device_slug(device) / f"harness-rules-{result['date']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=lambda x: None if isinstance(x, float) and math.isnan(x) else str(x)) + "\n")
    print(json.dumps(result["summary"], indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
