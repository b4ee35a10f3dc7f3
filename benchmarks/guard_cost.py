"""What do the guards cost? Seconds per judged candidate with every guard on (the judge's default)
and with them off (``JudgeOptions(guards=False)``: correctness and timing only, as a plain harness
would judge), on the same candidates, build cache warm, alternating on/off so drift hits both.
Also prints the measured kernel time both ways: the guards must not change what is measured.
Not a test: prints a table and writes JSON.

    python benchmarks/guard_cost.py --device cuda --repeat 3 --out guard_cost.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from judge_speed import candidates  # noqa: E402  (the same fixture candidates)

from kbench_lib.core.candidates import load_candidate  # noqa: E402
from kbench_lib.judging.pipeline import JudgeOptions, judge  # noqa: E402
from kbench_lib.suite.problems import find_problem, load_problem  # noqa: E402

FIX = REPO / "tests" / "fixtures"
# real solutions beside the fixture: a reduction (CUDA), a fused GEMM epilogue (Triton)
SOLUTIONS = ["level1/14_Diag_Matmul", "level2/2_Gemm_BiasAdd_ReLU_Square"]


def cases(device: str, solutions: list[str]) -> list[tuple[str, object, object]]:
    fixture = load_problem(FIX / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    out = [(f"fixture/{b}", fixture, c) for b, c in candidates(device).items() if b != "torch"]
    if device == "cuda":
        for key in solutions:
            level, stem = key.split("/")
            path = REPO / "problems" / "solutions" / level / f"{stem}.py"
            if path.exists():
                out.append((key, find_problem(REPO / "problems", key), load_candidate(path)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timing-budget", type=float, default=1.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--solutions", nargs="*", default=SOLUTIONS, help="problems/solutions entries judged beside the fixtures (GPU)")
    a = ap.parse_args()
    os.environ.setdefault("KBENCH_CACHE", tempfile.mkdtemp(prefix="kbench-guard-cost-"))
    rows = []
    for name, problem, cand in cases(a.device, a.solutions):
        opts = {g: JudgeOptions(device=a.device, timing_budget_s=a.timing_budget, guards=g) for g in (True, False)}
        first = judge(problem, cand, opts[True])  # builds; not counted
        runs: dict[bool, list] = {True: [], False: []}
        for _ in range(a.repeat):
            for g in (True, False):
                runs[g].append(judge(problem, cand, opts[g]))
        row = {"candidate": name, "backend": cand.backend, "first_correct": first.correct, "first_flags": first.flags}
        for g, vs in runs.items():
            tag = "on" if g else "off"
            row[f"judge_s_{tag}"] = statistics.median(v.judge_s for v in vs)
            row[f"runtime_ms_{tag}"] = statistics.median(v.runtime_ms for v in vs) if all(v.runtime_ms for v in vs) else None
            row[f"correct_{tag}"] = all(v.correct for v in vs)
            row[f"stage_s_{tag}"] = vs[-1].stage_s
        row["flags_on"] = runs[True][-1].flags
        rows.append(row)
        print(json.dumps(row, default=str), flush=True)
    print(f"\n{'candidate':42} {'judge s on':>10} {'judge s off':>11} {'cost':>6} {'kernel ms on':>12} {'kernel ms off':>13}")
    for r in rows:
        cost = r["judge_s_on"] / r["judge_s_off"] if r["judge_s_off"] else float("nan")
        k_on = f"{r['runtime_ms_on']:.4g}" if r["runtime_ms_on"] else "-"
        k_off = f"{r['runtime_ms_off']:.4g}" if r["runtime_ms_off"] else "-"
        print(f"{r['candidate']:42} {r['judge_s_on']:10.2f} {r['judge_s_off']:11.2f} {cost:5.2f}x {k_on:>12} {k_off:>13}")
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
