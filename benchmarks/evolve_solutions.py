"""Evolutionary autotuning of the hand-written solutions on the GPU: does ``evolve`` with the
offline tuner find faster, still-correct kernels? Not a test: run it on the GPU machine.

    python benchmarks/evolve_solutions.py --minutes 9 --out-dir results/benchmarks
    python benchmarks/evolve_solutions.py --minutes 9 --out-dir results/benchmarks --resume   # the same run, on
    python benchmarks/evolve_solutions.py --problems level1/66_L2Normalize level2/2_Gemm --search-s 60

For each problem (``--problems``: keys or parts of keys; default every Triton solution, whose
candidates compile in seconds), one after another, ``kbench_lib.strategies`` runs ``evolve`` with
the ``tune`` proposer at full size for ``--search-s`` seconds: the solution itself and
``--population - 1`` random configurations of its constants, then generations of ``--proposals``
mutations and crossovers of the best trusted candidates, judged with every guard on, the
``culprit`` verifier advising (ground truth: every candidate is judged, so its precision and recall
are measured). Then, when its best candidate is not the solution, the solution and the best are
judged again, ``--confirm-pairs`` times each, interleaved (:func:`confirm`), because the best of
many noisy measurements is biased towards luck: a gain counts only if the search and the median
pair both find it by ``CONFIRM_MARGIN`` and no pair finds the best slower.

A problem is finished (searched and confirmed) before the next one starts, and none is started
that the time left of ``--minutes`` cannot finish; everything is written after each problem. A
run that did not reach every problem goes on with ``--resume`` (same ``--name`` and out dir): the
finished problems are kept, a search that was cut short replays its recorded proposals and goes
on, and the records of every call are one run. With ``--extend-s``, once every problem is finished,
each one whose search found its best at least ``--extend-above`` faster than the seed without the
gain holding is searched that much longer (its search replays and goes on) and evaluated again; a
best that did not change keeps its confirmation.

Writes ``<out-dir>/<device-slug>/<name>/`` (``--name``, default ``evolve_solutions-<date>``):
``improvements.json`` (per problem: the solution's time, the best time, their ratio, in the search
and in the confirmation, whether the best is correct and unflagged, its flags and changed
constants; ``complete`` once every problem is in), ``records.parquet`` (every verdict, the
confirmations as strategy ``confirm``), and the figures ``gains`` (each problem's gain over its
solution against proposals and judge seconds, confirmed gains marked), ``scaling`` and
``verifiers`` (PDF, PNG).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kbench_lib.generation.runs import select  # noqa: E402
from kbench_lib.judging.pipeline import JudgeOptions, judge, prepare_problem  # noqa: E402
from kbench_lib.core.provenance import device_name, device_slug, resolve_device  # noqa: E402
from kbench_lib.scoring.records import RecordWriter, read_records, row_from_verdict, save_records  # noqa: E402
from kbench_lib.reports.search_metrics import verifier_confusion  # noqa: E402
from kbench_lib.strategies import TunerProposer, run_strategy, workflow  # noqa: E402
from kbench_lib.workflows import runnable_backends  # noqa: E402

CONFIRM_MARGIN = 1.01  # the median pair must beat the solution by 1%, and every pair must find the best no slower
RUN_ID = "evolve"
FIRST_CONFIRM_GUESS_S = 45.0  # what a confirmation is assumed to take before one has been timed


def _args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", nargs="*", default=None, help="problem keys or parts of keys (default: every solution the tuner can run)")
    ap.add_argument("--minutes", type=float, default=9.0, help="this call's wall time: no problem is started that it cannot finish")
    ap.add_argument("--search-s", type=float, default=60.0, help="seconds of search per problem")
    ap.add_argument("--cuda-search-s", type=float, default=180.0,
                    help="seconds of search per problem whose solution is CUDA (its proposals build for about a minute, in parallel)")
    ap.add_argument("--cuda-proposals", type=int, default=8, help="proposals per generation for a CUDA solution (built at once)")
    ap.add_argument("--extend-s", type=float, default=0.0, help="once every problem is finished, seconds more for each promising one")
    ap.add_argument("--extend-above", type=float, default=1.003, help="promising: its search found the best this much faster than the seed")
    ap.add_argument("--backends", nargs="*", default=["triton"], help="solutions of these backends (CUDA ones build for a minute per proposal)")
    ap.add_argument("--build-jobs", type=int, default=None,
                    help="candidates of a generation built at once on the CPU cores (default: up to 8 when CUDA solutions are searched)")
    ap.add_argument("--name", default=None, help="the run's folder under <out-dir>/<device-slug>/ (default evolve_solutions-<date>)")
    ap.add_argument("--resume", action="store_true", help="go on with the run in that folder instead of starting it afresh")
    ap.add_argument("--population", type=int, default=2)
    ap.add_argument("--proposals", type=int, default=2, help="proposals per generation")
    ap.add_argument("--generations", type=int, default=50, help="at most; the time share ends a search first")
    ap.add_argument("--seeds", type=int, default=2, help="fresh input sets for the default configuration (variants always checked)")
    ap.add_argument("--timing-budget", type=float, default=0.5, help="seconds of timed trials per candidate at most")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--small", action="store_true", default=None, help="SMALL configurations (default: full size on a GPU, SMALL on the CPU)")
    ap.add_argument("--out-dir", default=str(REPO / "results" / "benchmarks"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--confirm-pairs", type=int, default=3, help="interleaved re-judgements of the solution and the best")
    return ap.parse_args(argv)


def confirm(problem, tuner: TunerProposer, best_row: dict, opts: JudgeOptions, writer: RecordWriter, pairs: int) -> dict:
    """The shipped solution and the best candidate judged again, ``pairs`` times each, interleaved
    (solution, best, best, solution, ...: a slow drift of the GPU's state cancels out) on one prepared
    reference. Two judgements of one kernel minutes apart differed by up to 35% on the H100 (the
    KLDiv solution: 0.192 ms in the search, 0.259 ms in its confirmation), so one pair proves little.
    Returns the verdicts of each pair: {"solution": [...], "best": [...]}."""
    solution = tuner.base(problem)[0]
    best = tuner.candidate(problem, dict(best_row["knobs"]))
    prepared = prepare_problem(problem, opts)
    out: dict = {"solution": [], "best": []}
    try:
        for k in range(pairs):
            order = (("solution", solution), ("best", best)) if k % 2 == 0 else (("best", best), ("solution", solution))
            for name, cand in order:
                v = judge(problem, cand, opts, prepared=prepared)
                writer.append(row_from_verdict(v, run_id=writer.run_id, model="tune", strategy="confirm", tags=problem.tags,
                                               extra={"operation": "confirm", "proposal_id": name, "judged": True}))
                out[name].append(v)
    finally:
        prepared.release()
    return out


def confirmed_gain(solution_ms: list, best_ms: list) -> tuple[float | None, list[float]]:
    """(median over pairs of solution time / best time, each pair's ratio); None when a pair has no time."""
    ratios = [s / b for s, b in zip(solution_ms, best_ms) if s and b]
    if not ratios or len(ratios) < len(solution_ms):
        return None, ratios
    return statistics.median(ratios), ratios


class Run:
    """The run's folder: its records, its per-problem results and, while a call runs, the records
    folder the strategy appends to (seeded from ``records.parquet`` when resuming)."""

    def __init__(self, out: Path, device: str, resume: bool):
        self.out, self.device = out, device
        if out.exists() and not resume:
            shutil.rmtree(out)
        out.mkdir(parents=True, exist_ok=True)
        self.runs = out / "runs"
        previous = out / "records.parquet"
        if resume and previous.exists() and not (self.runs / RUN_ID / "records").exists():
            (self.runs / RUN_ID / "records").mkdir(parents=True)
            shutil.copy(previous, self.runs / RUN_ID / "records" / "part-0-resumed.parquet")
        report = out / "improvements.json"
        earlier = json.loads(report.read_text()) if resume and report.exists() else {}
        self.results: list[dict] = earlier.get("results", [])
        self.calls = earlier.get("calls", 0) + 1

    def done(self, problem) -> bool:
        return any(e["problem"] == problem.key for e in self.results)

    def records(self):
        return read_records(self.runs, RUN_ID)

    def save(self, problems, complete: bool, extra: dict | None = None, rows=None) -> dict:
        """Writes ``records.parquet`` (``rows``: the records when the caller has read them) and ``improvements.json``."""
        save_records(self.records() if rows is None else rows, self.out / "records.parquet")
        report = {"device": device_name(self.device), "date": dt.date.today().isoformat(), "complete": complete, "calls": self.calls,
                  "margin": CONFIRM_MARGIN, "problems": len(problems), "finished": len(self.results),
                  "improved": sum(e["improved"] for e in self.results), **(extra or {}), "results": self.results}
        (self.out / "improvements.json").write_text(json.dumps(report, indent=1, default=str))
        return report


def backends(a, device: str) -> tuple[str, ...]:
    return tuple(b for b in runnable_backends(device) if b in a.backends)


def is_cuda(problem, tuner: TunerProposer | None) -> bool:
    base = tuner.base(problem) if tuner is not None else None
    return base is not None and base[0].backend == "cuda"


def search_seconds(problem, a, tuner: TunerProposer) -> float:
    return a.cuda_search_s if is_cuda(problem, tuner) else a.search_s


def search_one(problem, a, opts: JudgeOptions, run: Run, seconds: float, tuner: TunerProposer) -> None:
    """``evolve`` with the tuner on one problem for ``seconds`` (a resumed or extended search replays
    its recorded proposals first: they are not judged again). A CUDA solution's generations are
    ``--cuda-proposals`` wide: their builds run at once, so a wide generation costs about one build."""
    proposals = a.cuda_proposals if is_cuda(problem, tuner) else a.proposals
    run_strategy([problem], "tune", "evolve", params={"population": a.population, "generations": a.generations, "proposals": proposals,
                 "seed": a.seed}, budget={"wall_s": seconds}, verify=["culprit"], ground_truth=True, run_id=RUN_ID,
                 runs_root=run.runs, opts=opts, backends=backends(a, opts.device), cache_path=run.runs / "observations.sqlite",
                 cache_mode="refresh", build_jobs=build_jobs(a, opts.device))


def build_jobs(a, device: str) -> int:
    """``--build-jobs``, or, by default, up to 8 parallel builds when CUDA solutions are searched (a
    ``load_inline`` build takes most of a minute; Triton compiles in the worker, at its first launch)."""
    if a.build_jobs is not None:
        return a.build_jobs
    return min(8, max(1, (os.cpu_count() or 1) // 2), max(a.proposals, a.cuda_proposals)) if "cuda" in backends(a, device) else 0


CONFIRMATION = ("confirm_solution_ms", "confirm_best_ms", "confirm_ratios", "confirm_speedup", "confirm_every_pair_faster", "correct", "flags",
                "solution_trusted")


def evaluate(problem, a, opts: JudgeOptions, run: Run, tuner: TunerProposer, previous: dict | None = None) -> dict:
    """The problem's entry: what its search found and, when the best is not the solution, whether
    the confirmation holds it. After an extension (``previous``: the entry before it), a best that
    did not change keeps its confirmation: it is not judged again until it passes."""
    df = run.records()
    search = df[(df["strategy"] != "confirm") & (df["problem"] == problem.key)]
    table = workflow.improvements(search).set_index("problem")
    r = table.loc[problem.key].to_dict() if problem.key in table.index else {}
    entry = {"problem": problem.key, "search_s": search_seconds(problem, a, tuner), "proposals": int(len(search)), "judged": int(search["judged"].fillna(True).sum()),
             "trusted": int(r.get("trusted", 0)), "solution_ms": r.get("first_ms"), "best_ms": r.get("best_ms"),
             "search_speedup": r.get("gain"), "best_id": r.get("best_id"), "best_speedup_eager": r.get("best_speedup_eager")}
    best_row = search[search["proposal_id"] == r.get("best_id")].iloc[-1].to_dict() if r.get("best_id") else None
    entry["best_knobs_changed"] = _changed(search, best_row)
    if previous is not None and previous.get("best_id") == r.get("best_id"):
        entry.update({k: previous[k] for k in (*CONFIRMATION, "note") if k in previous})
    elif best_row is not None and r.get("best_id") != "p0" and best_row.get("knobs") is not None:
        c = confirm(problem, tuner, best_row, opts, RecordWriter(run.runs, RUN_ID), a.confirm_pairs)
        s_ms, b_ms = [v.runtime_ms for v in c["solution"]], [v.runtime_ms for v in c["best"]]
        gain, ratios = confirmed_gain(s_ms, b_ms)
        entry.update({"confirm_solution_ms": s_ms, "confirm_best_ms": b_ms, "confirm_ratios": ratios, "confirm_speedup": gain,
                      "confirm_every_pair_faster": bool(ratios) and min(ratios) >= 1.0,
                      "correct": all(v.correct for v in c["best"]), "flags": sorted({f for v in c["best"] for f in v.flags}),
                      "solution_trusted": all(v.trusted for v in c["solution"])})
    else:
        entry.update({"confirm_speedup": None, "correct": bool(best_row["correct"]) if best_row else False,
                      "flags": list(best_row["flags"]) if best_row else [], "note": "the solution itself was the best found"})
    gains = [entry.get("search_speedup"), entry.get("confirm_speedup")]
    entry["improved"] = bool(entry["correct"] and not entry["flags"] and entry.get("confirm_every_pair_faster", False)
                             and all(x is not None and not math.isnan(x) and x >= CONFIRM_MARGIN for x in gains))
    return entry


def _extendable(entry: dict, a) -> bool:
    gain = entry.get("search_speedup")
    return (a.extend_s > 0 and not entry["improved"] and "extended_s" not in entry and gain is not None and not math.isnan(gain)
            and gain >= a.extend_above)


def extend(problems, a, opts: JudgeOptions, run: Run, tuner: TunerProposer, left_s: float, confirm_s: float) -> None:
    """Once every problem is finished: the problems whose search found a gain of at least
    ``--extend-above`` without it holding (or reaching the margin) are searched ``--extend-s``
    seconds more, the most promising first, then evaluated again. Search time goes where the
    signal is; the bar a gain must pass does not move."""
    started = time.monotonic()
    by_key = {p.key: p for p in problems}
    for entry in sorted((e for e in run.results if _extendable(e, a)), key=lambda e: -e["search_speedup"]):
        left = left_s - (time.monotonic() - started)
        if left < a.extend_s + confirm_s:
            print(f"stopping before extending {entry['problem']}: {left:.0f} s left; go on with --resume", flush=True)
            return
        problem = by_key[entry["problem"]]
        search_one(problem, a, opts, run, a.extend_s, tuner)
        new = evaluate(problem, a, opts, run, tuner, previous=entry)
        new.update({"search_s": entry["search_s"], "extended_s": a.extend_s,
                    "before_extension": {k: entry.get(k) for k in ("proposals", "best_id", "search_speedup", "confirm_ratios", "improved")}})
        run.results[run.results.index(entry)] = new
        print(json.dumps(new, default=str), flush=True)
        run.save(problems, complete=False)


def figures(run: Run, search_rows) -> dict:
    """``gains``, ``scaling`` and (with verifier decisions) ``verifiers`` from every search record."""
    confirmed = {e["problem"]: e["confirm_speedup"] for e in run.results if e["improved"]}
    return workflow.figures(search_rows, run.out, confirmed=confirmed) if len(search_rows) else {}


def chosen_problems(a, tuner: TunerProposer) -> list:
    """The problems of ``--problems`` (default: all) with a seed the tuner can run, in the order asked for:
    the most promising first, when a run may not reach every problem in one call."""
    problems = [p for p in select(None, None, a.problems) if tuner.covers(p)]
    if a.problems:
        problems.sort(key=lambda p: min(i for i, f in enumerate(a.problems) if f in p.key))
    return problems


def search_all(todo, a, opts: JudgeOptions, run: Run, tuner: TunerProposer, problems, left_s) -> float:
    """Searches and evaluates the problems of ``todo`` in order while the next one still fits in the
    time left (``left_s()``); returns the longest confirmation seen (plus a margin)."""
    confirm_s, seen = FIRST_CONFIRM_GUESS_S, []
    for problem in todo:
        seconds = search_seconds(problem, a, tuner)
        if left_s() < seconds + confirm_s:
            print(f"stopping before {problem.key}: {left_s():.0f} s left, a problem takes about {seconds + confirm_s:.0f} s; "
                  f"go on with --resume", flush=True)
            break
        search_one(problem, a, opts, run, seconds, tuner)
        t0 = time.monotonic()
        run.results.append(evaluate(problem, a, opts, run, tuner))
        if run.results[-1].get("confirm_speedup") is not None:
            seen.append(time.monotonic() - t0)
            confirm_s = max(seen) + 10.0
        print(json.dumps(run.results[-1], default=str), flush=True)
        run.save(problems, complete=False)  # a call cut short keeps every finished problem
    return confirm_s


def finish(run: Run, problems, a, minutes: float) -> dict:
    """The figures and the report of everything recorded so far; the records folder goes (all of it
    is in records.parquet)."""
    from kbench_lib.scoring.metrics import timing_kind

    complete = all(run.done(p) for p in problems) and not [e for e in run.results if _extendable(e, a)]
    rows = run.records()
    search_rows = rows[rows["strategy"] != "confirm"]
    made = figures(run, search_rows)
    confusion = verifier_confusion(search_rows)
    summary = run.save(problems, complete, {"timing": sorted(set(timing_kind(search_rows))), "search_s": a.search_s,
                                            "minutes_this_call": round(minutes, 2),
                                            "verifiers": confusion.to_dict("records") if len(confusion) else [],
                                            "figures": {k: [p.name for p in v] for k, v in made.items()}}, rows=rows)
    shutil.rmtree(run.runs, ignore_errors=True)
    return summary


def main(argv=None) -> int:
    a = _args(argv)
    started = time.monotonic()

    def left_s() -> float:
        return a.minutes * 60 - (time.monotonic() - started)

    device = resolve_device(a.device)
    tuner = TunerProposer(backends=backends(a, device))
    problems = chosen_problems(a, tuner)
    if not problems:
        print("no selected problem has a solution the tuner can run here", file=sys.stderr)
        return 2
    run = Run(Path(a.out_dir) / device_slug(device) / (a.name or f"evolve_solutions-{dt.date.today().isoformat()}"), device, a.resume)
    opts = JudgeOptions(device=device, small=a.small, n_seeds=a.seeds, timing_budget_s=a.timing_budget)
    todo = [p for p in problems if not run.done(p)]
    print(f"{len(problems)} problems on {device_name(device)} ({len(problems) - len(todo)} finished before), {a.search_s:.0f} s of "
          f"search each, {a.minutes:g} min for this call", flush=True)
    confirm_s = search_all(todo, a, opts, run, tuner, problems, left_s)
    if a.extend_s > 0 and all(run.done(p) for p in problems):
        extend(problems, a, opts, run, tuner, left_s(), confirm_s)
    summary = finish(run, problems, a, (time.monotonic() - started) / 60)
    print(f"{summary['improved']} of {summary['finished']} finished problems improved (confirmed, correct, unflagged); "
          f"{len(problems) - summary['finished']} of {len(problems)} left{'' if summary['complete'] else ' (go on with --resume)'}; {run.out}")
    return 0


def _changed(g, best_row) -> dict:
    """The constants of the best candidate that differ from the solution's."""
    if best_row is None or best_row.get("knobs") is None:
        return {}
    seed = g[g["proposal_id"] == "p0"]
    if not len(seed) or seed.iloc[0]["knobs"] is None:
        return {}
    base = dict(seed.iloc[0]["knobs"])
    return {k: [base.get(k), v] for k, v in dict(best_row["knobs"]).items() if base.get(k) != v}


if __name__ == "__main__":
    sys.exit(main())
