"""Does the judge's process survive one thread's profiler sessions beside another thread's CUDA work?

A two-GPU pass on two H200s (2026-11-27) that prepared references beside its workers died of a segmentation
fault after 97 of 110 verdicts, with no stack. What only a batch over several GPUs does in one
process: one judging thread runs profiler sessions (the reference's profile, the eager baseline's
device-busy clock; CUPTI is the process's) while another thread runs CUDA work of its own
(preparing references, comparing outputs). This runs exactly that for ``--seconds``: thread A
profiles a problem's reference over and over on the first GPU, thread B prepares references on
the second (or the same one). faulthandler prints every thread's stack if the process crashes.
One JSON line at the end: the sessions and preparations made.

``--pattern both`` is what a two-GPU batch does over its whole length (a later two-GPU
pass's fault came there, 2026-11-27): each GPU's thread profiles its own references and prepares references in turn, so that
profiler sessions come from two threads of the process (one at a time, as the judge's lock keeps
them). ``--one-thread on`` sends every session to the process's one profiler thread, as the judge
now does (:func:`kbench_lib.profiling.on_session_thread`); ``off`` lets each thread make its own.

    python3 benchmarks/profiler_threads.py --seconds 120
    python3 benchmarks/profiler_threads.py --pattern both --one-thread off --seconds 90
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import torch  # noqa: E402

from kbench_lib import profiling  # noqa: E402
from kbench_lib.judge import JudgeOptions, prepare_problem  # noqa: E402
from kbench_lib.problems import discover  # noqa: E402
from server_start import prepare_until  # noqa: E402 - beside this file


def _profiles(stop: threading.Event, device: str, problems: list, counts: dict) -> None:
    """Thread A: profiler sessions as a judging thread makes them, until ``stop``."""
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    opts = JudgeOptions(device=device, timing_budget_s=0.2)
    preps = [prepare_problem(p, opts, device) for p in problems[:2]]
    k = 0
    while not stop.is_set():
        prep = preps[k % len(preps)]
        prep._ref_ops = prep._baseline = None  # measured again: the reference's profile, the eager baseline (its device clock)
        prep.reference_profile()
        prep.baseline(opts)
        counts["profiles"] += 1
        k += 1


def _profiles_and_preparations(stop: threading.Event, device: str, problems: list, counts: dict) -> None:
    """One GPU's thread of ``--pattern both``: its references profiled and timed, then one more
    prepared, in turn, until ``stop``."""
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    opts = JudgeOptions(device=device, timing_budget_s=0.2)
    k = 0
    while not stop.is_set():
        prep = prepare_problem(problems[k % len(problems)], opts, device)
        try:
            prep.reference_profile()
            prep.baseline(opts)
        finally:
            prep.release()
        counts[device] = counts.get(device, 0) + 1
        k += 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--problems", type=int, default=8, help="the first N level-1 problems")
    ap.add_argument("--pattern", choices=["beside", "both"], default="beside",
                    help="beside: one thread profiles, the other prepares; both: each GPU's thread does both")
    ap.add_argument("--one-thread", choices=["on", "off"], default="on", help="the judge's sessions on one profiler thread")
    a = ap.parse_args()
    faulthandler.enable(all_threads=True)
    profiling.SESSIONS_ON_ONE_THREAD = a.one_thread == "on"
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    devices = (["cuda:0", "cuda:1"] if n > 1 else ["cuda:0", "cuda:0"]) if n else ["cpu", "cpu"]
    problems = [p for p in discover(REPO / "problems") if p.level == "level1"][: a.problems]
    counts = {"profiles": 0, "prepared": 0}
    stop = threading.Event()
    if a.pattern == "both":
        counts = {}
        threads = [threading.Thread(target=_profiles_and_preparations, args=(stop, d, problems, counts), daemon=True)
                   for d in dict.fromkeys(devices)]
    else:
        threads = [threading.Thread(target=_profiles, args=(stop, devices[0], problems, counts), daemon=True),
                   threading.Thread(target=lambda: counts.update(prepared=prepare_until(stop, devices[1], problems)), daemon=True)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(a.seconds)
    stop.set()
    for t in threads:
        t.join()
    print(json.dumps({"devices": devices, "pattern": a.pattern, "one_thread": a.one_thread,
                      "seconds": round(time.monotonic() - t0, 1), **counts}), flush=True)


if __name__ == "__main__":
    main()
