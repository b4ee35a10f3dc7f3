"""What the end-to-end clock sees on a given GPU machine, for small kernels: how long the head start
really spins, how long the host takes to issue a call behind it, and what the first timed call on a
freshly drawn input set costs against repeats. Not a test: run it on the GPU machine.

    python3 benchmarks/timing_probe.py --out DIR [--repeats 3] [--judge 3]

Written because two GPU tests that pass on the H100 failed on an H200 machine
(2026-11-26): a small kernel's end-to-end time sat 19 us above its device-busy time behind the
40 us head start, and an honest Triton row sum was flagged ``memoisation_suspected`` on a derived
variant (first calls 0.17 ms, repeats 0.022 ms). Sections:

- ``spin``: the head start kernel alone, timed with events, for several lengths (does it last as
  long as asked?), and the host's own time to launch it.
- ``issue``: host microseconds from the spin's launch to the call's last launch returning (the
  part of the call that must fit inside the spin), per call, for the timing test's ``torch.mul``
  and the row-sum Triton kernel.
- ``clock``: ``time_cuda`` on both with head starts of several lengths: end-to-end median against
  the device-busy clock.
- ``first_round``: the worker's timing path in this process (warm-up on other sets, lazily drawn
  timed sets with blocks reserved, device-side samples after calls), per-call times of the first
  run, for the row sum on the derived variant's shape; with sets drawn ahead for comparison.
- ``judge``: the GPU test's judgement (row sum, derived variants timed) run ``--judge`` times, the
  first-round and median times of every configuration.

Writes DIR/timing_probe.json and prints a short summary.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kbench_lib import head_start, timing, worker  # noqa: E402

FIX = REPO / "tests" / "fixtures" / "derived"


def _row_sum():
    spec = importlib.util.spec_from_file_location("kbench_probe_row_sum", FIX / "row_sum_triton.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.ModelNew()


def _with_head_start(dev: torch.device, us: float):
    props = torch.cuda.get_device_properties(dev)
    hs = head_start.HeadStart(props.multi_processor_count, props.max_threads_per_multi_processor, us)
    timing._HEAD_STARTS[dev.index or 0] = (hs, timing._head_start_state(hs))
    timing._LONGER[dev.index or 0] = []  # this length only: time_cuda's ladder is this one step
    return hs


def spin(dev) -> dict:
    out = {}
    stream = torch.cuda.current_stream(dev).cuda_stream
    for us in (10, 40, 80, 160):
        hs = _with_head_start(dev, us)
        ms, host = [], []
        for _ in range(60):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(dev)
            a.record()
            t0 = time.perf_counter_ns()
            hs(stream)
            host.append((time.perf_counter_ns() - t0) / 1e3)
            b.record()
            torch.cuda.synchronize(dev)
            ms.append(a.elapsed_time(b))
        out[str(us)] = {"spin_ms_median": statistics.median(ms[10:]), "spin_ms_min": min(ms[10:]),
                        "spin_ms_max": max(ms[10:]), "launch_us_median": statistics.median(host[10:]),
                        "fills_device": hs.fills_device, "blocks": hs.blocks}
    return out


def issue(dev, fns: dict) -> dict:
    """Host time from just before the spin's launch to the call returning, per call."""
    hs = _with_head_start(dev, head_start.HEAD_START_US)
    stream = torch.cuda.current_stream(dev).cuda_stream
    out = {}
    for name, (fn, args) in fns.items():
        us = []
        for _ in range(200):
            torch.cuda.synchronize(dev)
            start = torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter_ns()
            hs(stream)
            start.record()
            fn(*args)
            us.append((time.perf_counter_ns() - t0) / 1e3)
            torch.cuda.synchronize(dev)
        us = us[20:]
        out[name] = {"median_us": statistics.median(us), "p90_us": sorted(us)[int(0.9 * len(us))], "max_us": max(us)}
    return out


def clock(dev, fns: dict) -> dict:
    out = {}
    for us in (0, 40, 80, 160):
        if us:
            _with_head_start(dev, us)
        for name, (fn, args) in fns.items():
            t = timing.time_cuda(fn, [args], min_trials=100, max_trials=300, budget_s=1, head_start=bool(us))
            out[f"{name}@{us}"] = {"median_ms": t.median_ms, "device_ms": t.device_ms, "p10_ms": t.p10_ms,
                                   "unjoined": t.unjoined_trials, "n": t.n_trials}
    _with_head_start(dev, head_start.HEAD_START_US)
    return out


class _Lazy:
    """The worker's lazily drawn timed sets (``worker._TimedDraws``), without its checks."""

    def __init__(self, shape, n, dev, reserve_like=None):
        self.shape, self.n, self.dev, self.sets = shape, n, dev, {}
        self.reserved = [torch.empty_like(reserve_like) for _ in range(n)] if reserve_like is not None else []

    def __len__(self):
        return self.n

    def __getitem__(self, j):
        if j not in self.sets:
            self.reserved.clear()
            x = torch.randn(self.shape, device=self.dev)
            x.sum()
            torch.cuda.synchronize(self.dev)
            self.sets[j] = [x]
        return self.sets[j]


def first_round(dev, repeats: int) -> list[dict]:
    model = _row_sum()
    shape = (2047, 6143)  # the derived variant the false flag was seen on
    rows = []
    captured: list = []
    real = timing.summarize

    def spy(samples, unjoined=0, n_sets=0):
        captured.append(list(samples))
        return real(samples, unjoined, n_sets)

    timing.summarize = spy
    try:
        for mode in ("lazy", "lazy_no_reserve", "ahead"):
            for r in range(repeats):
                warm = [[torch.randn(shape, device=dev)] for _ in range(2)]
                if mode == "ahead":
                    sets = [[torch.randn(shape, device=dev)] for _ in range(5)]
                    for s in sets:
                        s[0].sum()
                else:
                    sets = _Lazy(shape, 5, dev, warm[0][0] if mode == "lazy" else None)
                samples: dict = {}
                seen: dict = {}

                def keep(k, set_index, out):
                    seen[set_index] = seen.get(set_index, 0) + 1
                    if int.from_bytes(os.urandom(4), "little") % seen[set_index] == 0:
                        samples[set_index] = worker._snapshot([out])

                def call(x):
                    with torch.no_grad():
                        return model(x)

                captured.clear()
                t = timing.time_cuda(call, sets, warmup_sets=warm, after_call=keep, budget_s=1.0, device_clock=False)
                first_run = captured[0] if captured else []
                rows.append({"mode": mode, "repeat": r, "first_round_ms": t.first_round_ms, "median_ms": t.median_ms,
                             "remeasured": t.remeasured, "unjoined": t.unjoined_trials, "n": t.n_trials,
                             "first_calls_ms": [round(x, 4) for x in first_run[:12]]})
    finally:
        timing.summarize = real
    return rows


def judge_runs(n: int) -> list[dict]:
    from kbench_lib.candidates import load_candidate
    from kbench_lib.judge import JudgeOptions, judge
    from kbench_lib.problems import load_problem

    p = load_problem(FIX / "3_Row_Sum_Upstream.py")
    c = load_candidate(FIX / "row_sum_triton.py")
    opts = JudgeOptions(device="cuda", small=False, timing_budget_s=1.0, time_variants=True)
    rows = []
    for i in range(n):
        v = judge(p, c, opts)
        row = {"run": i, "correct": v.correct, "flags": v.flags, "default": {
            k: v.runtime_stats.get(k) for k in ("median_ms", "first_round_ms", "remeasured", "unjoined_trials", "n_trials", "device_ms")}}
        for name, t in (v.variant_timings or {}).items():
            stats = t.get("runtime_stats") or t
            row[name] = {k: stats.get(k) for k in ("median_ms", "first_round_ms", "remeasured", "unjoined_trials",
                                                   "n_trials", "device_ms", "runtime_ms") if k in stats}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--judge", type=int, default=3)
    ap.add_argument("--sections", nargs="*", default=["spin", "issue", "clock", "first_round", "judge"])
    args = ap.parse_args()
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    x, o = torch.randn(1 << 22, device=dev), torch.empty(1 << 22, device=dev)
    row_sum = _row_sum()
    r = torch.randn(2047, 6143, device=dev)

    def mul(a):
        return torch.mul(a, 1.0001, out=o)

    def rs(a):
        with torch.no_grad():
            return row_sum(a)

    rs(r)
    fns = {"mul": (mul, [x]), "row_sum": (rs, [r])}
    res: dict = {"device": torch.cuda.get_device_name(dev), "torch": torch.__version__}
    for section in args.sections:
        t0 = time.monotonic()
        if section == "spin":
            res["spin"] = spin(dev)
        elif section == "issue":
            res["issue"] = issue(dev, fns)
        elif section == "clock":
            res["clock"] = clock(dev, fns)
        elif section == "first_round":
            res["first_round"] = first_round(dev, args.repeats)
        elif section == "judge":
            res["judge"] = judge_runs(args.judge)
        print(f"== {section} ({time.monotonic() - t0:.1f} s)", flush=True)
        if section != "judge":
            print(json.dumps(res[section], indent=None), flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "timing_probe.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
