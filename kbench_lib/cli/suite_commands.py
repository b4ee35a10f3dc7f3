"""The suite's upkeep: ``kbench lint`` (problem files checked), ``kbench baselines`` (eager, compile and
CUDA-graph timings of every problem) and ``kbench index`` (the problem index)."""
from __future__ import annotations

import json
import os
import time

from .options import REPO, problems_path_refused, selected_problems


def add_lint_parser(sub) -> None:
    """``kbench lint PATH``: problem files checked."""
    p = sub.add_parser("lint", help="validate problem files")
    p.add_argument("path")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--small", dest="small", action="store_true", default=None)
    size.add_argument("--full", dest="small", action="store_false")
    p.add_argument("--device", default="auto")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--upstream", action="store_true", help="plain KernelBench files: do not require kbench's extensions")
    p.add_argument("--no-lowp", action="store_true", help="skip the bf16/fp16 conditioning report")
    p.add_argument("--strict", action="store_true", help="exit 1 when any problem fails")
    p.add_argument("--report", default=None, help="append one JSON line per problem to this file as each is done")
    p.add_argument("--resume", action="store_true", help="skip problems the --report file already has (a cut-off lint goes on)")
    p.add_argument("--filter", nargs="*", default=None, help="keep problems whose key contains any of these")
    p.set_defaults(fn=lint)


def lint(a) -> int:
    from tqdm.auto import tqdm

    from ..suite.lint import lint_problem, summarize
    from ..suite.problems import discover_with_errors
    from ..core.provenance import resolve_device

    device = resolve_device(a.device)
    small = a.small if a.small is not None else not device.startswith("cuda")
    problems, errors = discover_with_errors(a.path)
    if a.filter:
        problems = [p for p in problems if any(f in p.key for f in a.filter)]
    if a.resume and a.report and os.path.exists(a.report):
        with open(a.report) as f:
            done = {json.loads(line)["problem"] for line in f if line.strip()}
        problems = [p for p in problems if p.key not in done]
    reports = []
    for p in tqdm(problems, desc="lint", unit="problem", disable=a.quiet or a.json):
        started = time.monotonic()
        reports.append(lint_problem(p, device=device, small=small, require_extensions=not a.upstream, lowp=not a.no_lowp))
        if a.report:  # one line per problem as it is done: a run cut short still says what it saw
            one = summarize(reports[-1:])
            with open(a.report, "a") as f:
                f.write(json.dumps({"problem": p.key, "seconds": round(time.monotonic() - started, 2), "failed": one["failed"],
                                    "failures": one["failures"]}, default=str) + "\n")
    summary = summarize(reports)
    for path, err in errors:
        summary["total"] += 1
        summary["failed"] += 1
        summary["failures"].append({"problem": str(path), "config": "-", "check": "loads", "reason": str(err)})
    if not a.json:
        for problem, derived in summary["derived"].items():
            for d in derived:
                print(f"DERIVED {problem} [{d['config']}] {d['overrides']}")
        for problem, notes in summary["notes"].items():
            for note in notes:
                print(f"NOTE {problem}: {note}")
        for f in summary["failures"]:
            print(f"FAIL {f['problem']} [{f['config']}] {f['check']}: {f['reason']}")
        print(f"{summary['total']} problems, {summary['failed']} failed")
    else:
        print(json.dumps(summary, default=str))
    return 1 if summary["failed"] and a.strict else 0


def add_baselines_parser(sub) -> None:
    """``kbench baselines``: eager, compile and CUDA-graph timings of every problem (resumable)."""
    p = sub.add_parser("baselines", help="time every problem in eager, compile and cudagraph modes (resumable)")
    p.add_argument("problems", nargs="?", default=str(REPO / "problems"))
    p.add_argument("--modes", nargs="+", default=["eager", "compile", "cudagraph"], choices=["eager", "compile", "cudagraph"])
    p.add_argument("--device", default="auto")
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    size = p.add_mutually_exclusive_group()
    size.add_argument("--small", dest="small", action="store_true", default=None)
    size.add_argument("--full", dest="small", action="store_false")
    p.add_argument("--out", default=None, help="root folder (default results/baselines); a folder per device below it")
    p.add_argument("--compile-jobs", type=int, default=0, help="compile this many problems at once before timing (default: one at a time)")
    p.add_argument("--filter", nargs="*", default=None)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per (problem, mode)")
    p.add_argument("--budget", type=float, default=5.0, help="seconds of timed trials per (problem, mode)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(fn=baselines, refused=problems_path_refused)


def baselines(a) -> int:
    from ..judging.baselines import sweep

    problems = selected_problems(a, "baselines")
    if problems is None:
        return 2
    folder = sweep(problems, a.modes, a.device, a.precision, a.small, a.out, a.timeout, a.budget, progress=not a.quiet,
                   compile_jobs=a.compile_jobs)
    print(f"baselines in {folder}")
    return 0


def add_index_parser(sub) -> None:
    """``kbench index``: the problem index (tags, variants, FLOPs, bytes)."""
    p = sub.add_parser("index", help="write the problem index (tags, variants, FLOPs, bytes)")
    p.add_argument("problems", nargs="?", default=str(REPO / "problems"))
    p.add_argument("--out", default=str(REPO / "problems" / "index.csv"))
    p.set_defaults(fn=index)


def index(a) -> int:
    from ..suite.roofline import write_index

    df = write_index(a.problems, a.out)
    print(f"wrote {len(df)} problems to {a.out}")
    return 0
