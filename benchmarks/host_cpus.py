"""Is a slow host one CPU at a time, and does kbench's own work cause it?

The host-speed probe the judge takes between timed calls (``kbench_lib.measure.host_speed.probe_ms``)
taken every 20 ms on one CPU, with the measuring process pinned there: alone; with a busy loop on
each other CPU in turn (does any CPU of the machine, kept busy, slow this one? on a virtual machine
two virtual CPUs may be one physical core's two threads, which the guest is not told); then alone on
a few other CPUs. One JSON line per phase: the probe's fastest, median and 90th percentile, and the
share of probes over 1.5x the phase's fastest (the CPU's slow spells).

On a GPU machine (no GPU is used; nothing else of kbench's should run):

    python3 benchmarks/host_cpus.py --cpu 5 --out results/benchmarks/<device>/host_cpus-<date>.jsonl
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kbench_lib.measure.host_speed import probe_ms  # noqa: E402


def _busy(cpu: int, stop) -> None:
    os.sched_setaffinity(0, {cpu})
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x += i


def probes_on(cpu: int, seconds: float, every_s: float = 0.02) -> list[float]:
    """The probe taken every ``every_s`` for ``seconds`` with this thread pinned to ``cpu``."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        out, t0 = [], time.monotonic()
        while time.monotonic() - t0 < seconds:
            out.append(probe_ms())
            time.sleep(every_s)
        return out
    finally:
        os.sched_setaffinity(0, before)


def summary(ms: list[float]) -> dict:
    s = sorted(ms)
    return {"n": len(s), "min_ms": round(s[0], 3), "median_ms": round(statistics.median(s), 3),
            "p90_ms": round(s[int(0.9 * (len(s) - 1))], 3), "slow_share": round(sum(x > 1.5 * s[0] for x in s) / len(s), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu", type=int, default=None, help="the CPU measured (default: the second this process may use)")
    ap.add_argument("--seconds", type=float, default=1.0, help="seconds of probes per phase with another CPU busy")
    ap.add_argument("--alone-seconds", type=float, default=2.0, help="seconds of probes per phase alone")
    ap.add_argument("--others", type=int, nargs="*", default=None, help="CPUs measured alone at the end (default: four of them)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    cpu = args.cpu if args.cpu is not None else cpus[min(1, len(cpus) - 1)]
    rows = [{"phase": "alone", "cpu": cpu, **summary(probes_on(cpu, args.alone_seconds))}]
    print(json.dumps(rows[-1]), flush=True)
    for busy in (c for c in cpus if c != cpu):
        stop = mp.Event()
        p = mp.Process(target=_busy, args=(busy, stop))
        p.start()
        time.sleep(0.2)
        rows.append({"phase": "other_busy", "cpu": cpu, "busy": busy, **summary(probes_on(cpu, args.seconds))})
        stop.set()
        p.join()
        print(json.dumps(rows[-1]), flush=True)
    for other in args.others if args.others is not None else [c for c in cpus if c != cpu][:: max(1, len(cpus) // 4)][:4]:
        rows.append({"phase": "alone", "cpu": other, **summary(probes_on(other, args.alone_seconds))})
        print(json.dumps(rows[-1]), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
