"""How fast is the judge itself? Seconds for a first build, and seconds per judged candidate with a
warm build cache, per backend, on this machine's device. Not a test: prints a table and writes JSON.

    python benchmarks/judge_speed.py --device cuda --repeat 3 --out judge_speed.json
    # the throughput target: 8192x8192 fp32 problems, default options, warm candidates as a batch
    # judges them (one prepared reference per problem, shared) and as `kbench eval` does (prepared
    # afresh each time)
    python benchmarks/judge_speed.py --suite 8192 --shared-reference both --repeat 3

Each row carries the judge's own stages (``stage_s``) and the timing stage's phases (``timing_phase_s``:
input sets, setup, warm-up, timed trials, device-busy clock, writing samples), all in wall seconds.
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

from kbench_lib.core.candidates import Candidate, load_candidate  # noqa: E402
from kbench_lib.judging.pipeline import JudgeOptions, judge, prepare_problem  # noqa: E402
from kbench_lib.suite.problems import load_problem  # noqa: E402

FIX = REPO / "tests" / "fixtures"
BENCH_FIX = REPO / "benchmarks" / "fixtures"
SUITE_8192 = {  # problem file -> candidate file (benchmarks/fixtures)
    "1_ReLU_8192.py": "relu_cuda.py",
    "2_GELU_8192.py": "gelu_triton.py",
    "3_Softmax_Rows_8192.py": "softmax_triton.py",
}


def candidates(device: str) -> dict[str, Candidate]:
    out = {"triton": load_candidate(FIX / "candidates" / "scale_add_relu_triton.py"), "torch": load_candidate(FIX / "candidates" / "scale_add_relu_wrong.py")}
    if device == "cuda":
        from test_gpu import CUDA_SRC

        out["cuda"] = Candidate(CUDA_SRC, "cuda")
    else:
        out["cpp"] = load_candidate(FIX / "candidates" / "scale_add_relu_cpp.py")
    return out


def _pairs(a) -> list[tuple[str, object, Candidate]]:
    """(label, problem, candidate) to judge."""
    if a.suite == "8192":
        labels = {cand: cand.split("_")[0] + "/" + cand.split("_")[1].split(".")[0] for cand in SUITE_8192.values()}
        return [(labels[cand], load_problem(BENCH_FIX / "problems" / "level1" / prob), load_candidate(BENCH_FIX / "candidates" / cand))
                for prob, cand in SUITE_8192.items() if not a.backends or labels[cand] in a.backends]
    problem = load_problem(FIX / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    return [(backend, problem, cand) for backend, cand in candidates(a.device).items() if not a.backends or backend in a.backends]


def _options(a, timing: bool, arena: bool = True) -> JudgeOptions:
    if a.suite == "8192":
        return JudgeOptions(device=a.device, timing=timing, device_arena=arena)  # the target's "default options"
    return JudgeOptions(device=a.device, timing=timing, timing_budget_s=2.0, device_arena=arena)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--backends", nargs="*", default=None, help="default: every fixture backend for the device (--suite 8192: relu/cuda, gelu/triton, softmax/triton)")
    ap.add_argument("--timing", choices=["both", "on", "off"], default="both", help="judge with timing, without, or both")
    ap.add_argument("--suite", choices=["fixture", "8192"], default="fixture",
                    help="fixture: tests' 4096x4096 scale-add-relu, timing budget 2 s; 8192: the throughput target's "
                         "8192x8192 ReLU (CUDA), GELU and row softmax (Triton) with default options")
    ap.add_argument("--shared-reference", choices=["no", "yes", "both"], default="no",
                    help="warm judges reuse one prepared reference per problem, as a batch does (yes), prepare their own "
                         "as `kbench eval` does (no), or both")
    ap.add_argument("--device-arena", choices=["on", "off", "both"], default="on",
                    help="outputs through the judge's device arena (on, the default), through files (off), or both, "
                         "alternating judgement by judgement so that a host's drift falls on both alike")
    a = ap.parse_args()
    arenas = {"on": (True,), "off": (False,), "both": (True, False)}[a.device_arena]
    os.environ["KBENCH_CACHE"] = tempfile.mkdtemp(prefix="kbench-bench-cache-")
    rows = []
    for label, problem, cand in _pairs(a):
        for timing in {"both": (True, False), "on": (True,), "off": (False,)}[a.timing]:
            opts = _options(a, timing)
            t0 = time.monotonic()
            first = judge(problem, cand, opts)
            first_s = time.monotonic() - t0
            for shared in {"no": (False,), "yes": (True,), "both": (False, True)}[a.shared_reference]:
                prepared = None
                prepare_s = None
                if shared:
                    t0 = time.monotonic()
                    prepared = prepare_problem(problem, opts)
                    prepare_s = time.monotonic() - t0
                warm = {arena: [] for arena in arenas}
                judged = {arena: [] for arena in arenas}
                for _ in range(a.repeat):
                    for arena in arenas:
                        t0 = time.monotonic()
                        v = judge(problem, cand, _options(a, timing, arena), prepared=prepared)
                        warm[arena].append(time.monotonic() - t0)
                        judged[arena].append(v)
                for arena in arenas:
                    rows.append(_row(label, problem, timing, shared, arena, first, first_s, prepare_s, warm[arena], judged[arena]))
                    print(json.dumps(rows[-1], default=str), flush=True)
    _summary(rows)
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1, default=str))


def _row(label, problem, timing, shared, arena, first, first_s, prepare_s, warm, verdicts) -> dict:
    v = verdicts[-1]
    return {
        "backend": label, "problem": problem.key, "timing": timing, "shared_reference": shared, "device_arena": arena,
        "correct": all(x.correct for x in verdicts), "first_judge_s": first_s, "first_build_s": first.build_s,
        "prepare_s": prepare_s, "warm_judge_s_median": statistics.median(warm), "warm_judge_s": warm,
        "small": v.small, "device_name": v.device_name, "failure": v.failure,
        "flags": sorted({f for x in verdicts for f in x.flags}), "stage_s_last": v.stage_s,
        "timing_phase_s": (v.runtime_stats or {}).get("phase_s"),
        "warmup_calls": (v.runtime_stats or {}).get("warmup_calls"),
        "trials": (v.runtime_stats or {}).get("n_trials"), "remeasured": (v.runtime_stats or {}).get("remeasured"),
        "runtime_ms": v.runtime_ms, "baseline_ms": v.baseline_ms, "speedup": v.speedup,
    }


def _summary(rows: list[dict]) -> None:
    print(f"{'backend':14} {'timing':6} {'shared':6} {'correct':7} {'first build s':>13} {'first judge s':>13} {'warm judge s':>12}")
    for r in rows:
        fb = f"{r['first_build_s']:.1f}" if r["first_build_s"] else "-"
        print(f"{r['backend']:14} {str(r['timing']):6} {str(r['shared_reference']):6} {str(r['correct']):7} {fb:>13} "
              f"{r['first_judge_s']:13.1f} {r['warm_judge_s_median']:12.2f}  device arena: {'on' if r['device_arena'] else 'off'}")
        print("   stages (last warm judge):", r["stage_s_last"], r["failure"] or "", r["flags"] or "")
        if r["timing_phase_s"]:
            print("   timing phases:", r["timing_phase_s"], "warm-up calls", r["warmup_calls"], "trials", r["trials"],
                  "remeasured", r["remeasured"])


if __name__ == "__main__":
    main()
