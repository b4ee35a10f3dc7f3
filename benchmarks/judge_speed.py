"""How fast is the judge itself? Seconds for a first build, and seconds per judged candidate with a
warm build cache, per backend, on this machine's device. Not a test: prints a table and writes JSON.

    python benchmarks/judge_speed.py --device cuda --repeat 3 --out judge_speed.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from kbench_lib.candidates import Candidate, load_candidate  # noqa: E402
from kbench_lib.judge import JudgeOptions, judge  # noqa: E402
from kbench_lib.problems import load_problem  # noqa: E402

FIX = REPO / "tests" / "fixtures"


def candidates(device: str) -> dict[str, Candidate]:
    out = {"triton": load_candidate(FIX / "candidates" / "scale_add_relu_triton.py"), "torch": load_candidate(FIX / "candidates" / "scale_add_relu_wrong.py")}
    if device == "cuda":
        from test_gpu import CUDA_SRC

        out["cuda"] = Candidate(CUDA_SRC, "cuda")
    else:
        out["cpp"] = load_candidate(FIX / "candidates" / "scale_add_relu_cpp.py")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--backends", nargs="*", default=None, help="default: every fixture backend for the device")
    ap.add_argument("--timing", choices=["both", "on", "off"], default="both", help="judge with timing, without, or both")
    a = ap.parse_args()
    problem = load_problem(FIX / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    os.environ["KBENCH_CACHE"] = tempfile.mkdtemp(prefix="kbench-bench-cache-")
    rows = []
    for backend, cand in candidates(a.device).items():
        if a.backends and backend not in a.backends:
            continue
        for timing in {"both": (True, False), "on": (True,), "off": (False,)}[a.timing]:
            opts = JudgeOptions(device=a.device, timing=timing, timing_budget_s=2.0)
            t0 = time.monotonic()
            first = judge(problem, cand, opts)
            first_s = time.monotonic() - t0
            warm = []
            for _ in range(a.repeat):
                t0 = time.monotonic()
                v = judge(problem, cand, opts)
                warm.append(time.monotonic() - t0)
            rows.append({
                "backend": backend, "timing": timing, "correct": v.correct, "first_judge_s": first_s,
                "first_build_s": first.build_s, "warm_judge_s_median": statistics.median(warm), "warm_judge_s": warm,
                "small": v.small, "device_name": v.device_name, "failure": v.failure, "flags": v.flags,
                "stage_s_last": v.stage_s,
            })
            print(json.dumps(rows[-1], default=str), flush=True)
    print(f"{'backend':8} {'timing':6} {'correct':7} {'first build s':>13} {'first judge s':>13} {'warm judge s':>12}")
    for r in rows:
        fb = f"{r['first_build_s']:.1f}" if r["first_build_s"] else "-"
        print(f"{r['backend']:8} {str(r['timing']):6} {str(r['correct']):7} {fb:>13} {r['first_judge_s']:13.1f} {r['warm_judge_s_median']:12.2f}")
        print("   stages (last warm judge):", r["stage_s_last"], r["failure"] or "", r["flags"] or "")
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
