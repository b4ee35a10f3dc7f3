"""How steady is this host's speed, and does a host-bound model's time follow it?

In rounds about half a second apart, one process measures: the host-speed probe the judge takes
between timed calls (``kbench_lib.measure.host_speed.probe_ms``), a longer pure-Python loop, the
host cost of a tiny kernel launch and of a launch followed by a sync, and the event time and host
issue time of a few level-3 models (median of 10 calls each). Then the same rounds with the
measuring thread pinned to one core, then to another. One JSON line per round, then a summary
per phase: the spread of each figure and how the models' times correlate with the probe.

On a GPU machine:

    python3 benchmarks/host_speed.py --problems 27 29 --rounds 25 --out results/benchmarks/<device>/host_speed-<date>.jsonl

(``--problems`` takes level-3 problem numbers.) A model whose time tracks the probe while its
device time stays put is host-bound: its end-to-end time holds the host's speed at that moment.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from kbench_lib.measure.host_speed import probe_ms  # noqa: E402
from kbench_lib.suite.problems import Config, load_problem  # noqa: E402
from kbench_lib.suite.reference import build_reference, set_flags  # noqa: E402


def _model(number: str):
    path = glob.glob(str(REPO / "problems" / "level3" / f"{number}_*.py"))[0]
    model, _, inputs = build_reference(load_problem(path, "level3"), Config("default"), 1, 2, "cuda", "fp32")

    def call():
        with torch.no_grad():
            return model(*inputs)
    return Path(path).stem, call


def _timed(call, k: int = 10) -> tuple[float, float]:
    """(median event ms, median host issue ms) over ``k`` calls."""
    ev, issue = [], []
    for _ in range(k):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t = time.perf_counter()
        s.record()
        call()
        e.record()
        issue.append((time.perf_counter() - t) * 1e3)
        torch.cuda.synchronize()
        ev.append(s.elapsed_time(e))
    return statistics.median(ev), statistics.median(issue)


def _launch_us(x, n: int = 2000, sync: bool = False) -> float:
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n if not sync else n // 10):
        x.add_(1)
        if sync:
            torch.cuda.synchronize()
    dt = (time.perf_counter() - t) * 1e6 / (n if not sync else n // 10)
    torch.cuda.synchronize()
    return dt


def _corr(a: list[float], b: list[float]) -> float | None:
    return round(statistics.correlation(a, b), 3) if len(a) > 2 and statistics.pstdev(a) and statistics.pstdev(b) else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", nargs="+", default=["27", "29"], help="level-3 problem numbers")
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--out", default=None, help="also append the JSON lines here")
    a = ap.parse_args()
    torch.cuda.set_device(0)
    set_flags()
    models = [_model(n) for n in a.problems]
    for _, call in models:
        for _ in range(3):
            call()
    x = torch.zeros(16, device="cuda")
    cpus = sorted(os.sched_getaffinity(0))
    out = open(a.out, "a") if a.out else None
    for pinned in (None, cpus[min(1, len(cpus) - 1)], cpus[-1]):
        if pinned is not None:
            os.sched_setaffinity(0, {pinned})  # this thread only: the one that issues the work
        rows = []
        for r in range(a.rounds):
            row = {"device": torch.cuda.get_device_name(0), "pinned": pinned, "round": r, "probe_ms": round(probe_ms(), 3),
                   "loop_ms": round(probe_ms(200_000), 2), "launch_us": round(_launch_us(x), 2), "launch_sync_us": round(_launch_us(x, sync=True), 1)}
            for name, call in models:
                ev, issue = _timed(call)
                row[name] = {"event_ms": round(ev, 3), "issue_ms": round(issue, 3)}
            rows.append(row)
            line = json.dumps(row)
            print(line, flush=True)
            if out:
                out.write(line + "\n")
        probes = [r["probe_ms"] for r in rows]
        summary = {"summary": True, "pinned": pinned, "probe_ms": [min(probes), statistics.median(probes), max(probes)]}
        for name, _ in models:
            times = [r[name]["event_ms"] for r in rows]
            summary[name] = {"event_ms": [min(times), statistics.median(times), max(times)], "corr_with_probe": _corr(probes, times)}
        print(json.dumps(summary), flush=True)
        if out:
            out.write(json.dumps(summary) + "\n")
    if out:
        out.close()


if __name__ == "__main__":
    main()
