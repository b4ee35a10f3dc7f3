"""Why an honest torch.compile candidate was once flagged ``memoisation_suspected`` on the H100
(2026-11-27: first calls on new inputs 0.378 ms, repeats 0.0277 ms, device busy 0.0236 ms).
Judges candidates of the judge's own Linear+GELU fixture problem several times each, through the
real judge (one prepared reference shared, as a batch does), with the timing's trace on, and keeps
per judgement: the flags, the first round against its peers, how many first-round calls were issued
late (host time in their time), the host issue times, the processes the candidate had running and
their CPU use while it was timed, and every timed call of the first run. Run on the GPU machine:

    python3 benchmarks/compile_first_round.py --repeat 8 --out DIR

Candidates (``--kinds``):
- ``compile``:   kbench's torch-compile solver (Inductor, default settings);
- ``compile_1``: the same with Inductor's parallel compilation off (``compile_threads = 1``: no
                 compile-worker processes);
- ``reference``: the problem's own Model (eager PyTorch), the control.

Writes DIR/compile_first_round.jsonl and prints a table.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kbench_lib.candidates import Candidate  # noqa: E402
from kbench_lib.judge import JudgeOptions, judge, prepare_problem  # noqa: E402
from kbench_lib.models import compile_source  # noqa: E402
from kbench_lib.problems import load_problem  # noqa: E402

PROBLEM = REPO / "tests" / "fixtures" / "problems" / "level1" / "2_Linear_GELU.py"
ONE_THREAD = "import torch._inductor.config as _inductor_config\n_inductor_config.compile_threads = 1\n"


def sources(problem) -> dict[str, str]:
    compiled = compile_source(problem)
    reference = problem.path.read_text().replace("class Model(", "class ModelNew(")
    return {"compile": compiled, "compile_1": ONE_THREAD + compiled, "reference": reference}


def summary(v, kind: str, k: int, wall_s: float) -> dict:
    stats = v.runtime_stats or {}
    trace = stats.get("trace") or []
    firsts = [c for c in trace if c[3]]  # [ms, host issue us, spin us, first, unjoined]
    return {
        "kind": kind, "repeat": k, "correct": v.correct, "failure": v.failure, "flags": list(v.flags),
        "message": (v.message or "")[:300], "judge_s": round(wall_s, 3), "runtime_ms": v.runtime_ms,
        **{f: stats.get(f) for f in ("first_round_ms", "first_run_ms", "first_round_late", "first_round_issue_us", "device_ms",
                                     "head_start_us", "late_issues", "remeasured", "n_trials", "warmup_calls", "others",
                                     "others_cpu_s")},
        "first_calls": firsts,
        "first_unjoined": sum(c[4] for c in firsts if len(c) > 4),
        "first_spins_us": sorted({c[2] for c in firsts}),
        "trace": trace,
        "stage_s": v.stage_s,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--kinds", nargs="+", default=["compile", "compile_1", "reference"])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    problem = load_problem(PROBLEM)
    opts = JudgeOptions(device=a.device, timing_budget_s=0.5, timing_trace=True)
    prepared = prepare_problem(problem, opts)
    srcs = sources(problem)
    rows = []
    with open(a.out / "compile_first_round.jsonl", "w") as f:
        for k in range(a.repeat):  # kinds interleaved: a drift of the host touches each alike
            for kind in a.kinds:
                t0 = time.monotonic()
                v = judge(problem, Candidate(srcs[kind], "torch", name=f"{problem.path.stem}__{kind}"), opts, prepared=prepared)
                row = summary(v, kind, k, time.monotonic() - t0)
                rows.append(row)
                f.write(json.dumps(row) + "\n")
                f.flush()
                memo = [x for x in row["flags"] if x.startswith("memoisation")]
                print(f"{kind:10s} #{k} correct={row['correct']} first={row['first_round_ms']} peers={row['first_run_ms']} "
                      f"median={row['runtime_ms']} device={row['device_ms']} late_first={row['first_round_late']} "
                      f"issue_first_us={row['first_round_issue_us']} others={row['others']} others_cpu_s={row['others_cpu_s']} "
                      f"first_unjoined={row['first_unjoined']} first_spins={row['first_spins_us']} remeasured={row['remeasured']} flags={row['flags'] if row['flags'] else '-'}"
                      f"{' MEMO' if memo else ''}", flush=True)
    print("\nkind        judged  memo-flagged  first/median (median over judgements)")
    for kind in a.kinds:
        mine = [r for r in rows if r["kind"] == kind and r["runtime_ms"]]
        flagged = sum(any(x.startswith("memoisation") for x in r["flags"]) for r in mine)
        ratios = [r["first_round_ms"] / r["runtime_ms"] for r in mine if r["first_round_ms"]]
        print(f"{kind:10s}  {len(mine):6d}  {flagged:12d}  {statistics.median(ratios) if ratios else float('nan'):.3f}")


if __name__ == "__main__":
    main()
