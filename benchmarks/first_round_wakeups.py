"""How often the judge's own host makes an honest call's first round look slow, on a loaded host.

The memoisation check (``kbench_lib.isolation.worker.timed._timing_flags``) compares the first
calls on never-seen input sets with the repeats. A first call whose event after the device-wide
sync comes late (the host woke late from the sync) is counted as unjoined and timed up to that
sync: tens of microseconds on a call of a few. This times an honest 7 us call (``a * 2.0`` on 4 MB,
its host path 1 ms slower on each first call, as after a set's draw) ``--runs`` times with
``--load`` busy processes beside it, twice: with the first calls' late gaps re-checked against an
idle gap taken right after them (``timing._FlushedCalls.first_gap_rechecked``, "on") and without
("off", the rule before it). Per mode: first calls counted as unjoined, calls the re-check excused,
and first rounds that read as memoisation by their median and by their fastest call (the check
reads the fastest). One JSON object with every timing's first calls.

On a GPU machine (one GPU; the load runs on the CPUs the process may use):

    python3 benchmarks/first_round_wakeups.py --runs 20 --load 12 --out results/benchmarks/<device>/first_round-<date>.json
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from kbench_lib.isolation.worker.timed import MEMO_MIN_MS, MEMO_RATIO  # noqa: E402
from kbench_lib.measure import timing  # noqa: E402


def _busy(stop) -> None:
    x = 0
    while not stop.is_set():
        x += 1


def _reads_as_memo(first_ms: float, median_ms: float) -> bool:
    return median_ms < MEMO_RATIO * first_ms and first_ms - median_ms > MEMO_MIN_MS


def one_timing() -> dict:
    """One timing of the honest call: its first calls' times and whether each was timed to the sync."""
    seen: set = set()

    def slow_host_on_first_calls(a):
        if a.data_ptr() not in seen:
            seen.add(a.data_ptr())
            time.sleep(0.001)
        return a * 2.0

    warm = [[torch.randn(1 << 20, device="cuda")] for _ in range(2)]
    sets = [[torch.randn(1 << 20, device="cuda")] for _ in range(5)]
    for s in sets:  # touched once before their first call, as the worker's draws are
        s[0].sum()
    torch.cuda.synchronize()
    t = timing.time_cuda(slow_host_on_first_calls, sets, warmup_sets=warm, min_trials=100, max_trials=200, budget_s=1,
                         device_clock=False, trace=True)
    firsts = [row for row in t.trace if row[3]][:len(sets)]
    return {"first_ms": round(t.first_round_ms, 5), "fastest_first_ms": round(t.first_round_fastest_ms, 5),
            "median_ms": round(t.median_ms, 5), "excused": t.first_round_excused,
            "first_unjoined": [row[4] for row in firsts], "first_t": [row[0] for row in firsts]}


def measure(runs: int) -> dict:
    """Both modes, ``runs`` timings each."""
    rechecked = timing._FlushedCalls.first_gap_rechecked
    out = {}
    try:
        for mode in ("off", "on"):
            timing._FlushedCalls.first_gap_rechecked = rechecked if mode == "on" else (lambda self, t, spin: (t, 1))
            rows = [one_timing() for _ in range(runs)]
            out[mode] = {"runs": runs, "first_calls": sum(len(r["first_t"]) for r in rows),
                         "first_unjoined": sum(sum(r["first_unjoined"]) for r in rows),
                         "excused": sum(r["excused"] for r in rows),
                         "memo_by_median": sum(_reads_as_memo(r["first_ms"], r["median_ms"]) for r in rows),
                         "memo_by_fastest": sum(_reads_as_memo(r["fastest_first_ms"], r["median_ms"]) for r in rows),
                         "rows": rows}
            print(mode, {k: v for k, v in out[mode].items() if k != "rows"}, flush=True)
    finally:
        timing._FlushedCalls.first_gap_rechecked = rechecked
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--load", type=int, default=12, help="busy processes beside the timings")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    stop = mp.get_context("fork").Event()
    load = [mp.get_context("fork").Process(target=_busy, args=(stop,)) for _ in range(args.load)]
    for p in load:
        p.start()
    try:
        out = {"device_name": torch.cuda.get_device_name(), "load": args.load, **measure(args.runs)}
    finally:
        stop.set()
        for p in load:
            p.join()
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")
        print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
