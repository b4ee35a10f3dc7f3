"""First calls on unseen data against repeats, for honest kernels: the memoisation check's false
positives, and what in the harness causes them. Run on the GPU machine:

    python3 benchmarks/first_round.py --out DIR [--repeats 3]

The judge flags ``memoisation_suspected`` when repeats on seen data take under 30% of the first
calls on unseen data (``worker.MEMO_RATIO``). An honest kernel takes as long both times, so any
gap an honest kernel shows comes from the harness. Per kernel (the fixture problem in eager PyTorch, its Triton candidate) and
per harness variant, ``time_cuda`` is run ``--repeats`` times the way the worker runs it (warm-up
on other sets, 5 timed sets) and the first-round median is compared with the median:

- ``none``:        no work between calls;
- ``cpu_sample``:  the worker's reservoir sample, a synchronous copy of the output to the CPU
                   (every first call of a set is sampled, later ones with probability 1/round);
- ``cpu_sample_nogc``: the same with Python's garbage collector off;
- ``idle``:        no copy, but the host sleeps as long as a copy takes after the same calls
                   (tells a GPU left idle apart from the copy's own side effects);
- ``gpu_sample``:  the sample is a device-side clone (no host round trip, no idle GPU).

Writes DIR/first_round.jsonl (one line per kernel, variant and repeat) and prints a table.
"""
from __future__ import annotations

import argparse
import gc
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

from kbench_lib import worker  # noqa: E402
from kbench_lib.problems import instantiate, load_problem  # noqa: E402
from kbench_lib.timing import time_cuda  # noqa: E402

N_SETS = 5


FIXTURES = REPO / "tests" / "fixtures"


def _kernels() -> dict:
    """The judge's own scale-add-relu fixture problem (eager PyTorch) and its Triton candidate, the
    kernel the false flag was first seen on, both with scale 1.5."""
    problem = instantiate(load_problem(FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py"))
    spec = importlib.util.spec_from_file_location("kbench_first_round_triton", FIXTURES / "candidates" / "scale_add_relu_triton.py")
    triton_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(triton_module)  # a real file: triton.jit reads the kernel's source from it
    return {"eager": problem["Model"](1.5), "triton": triton_module.ModelNew(1.5)}


def _sampler(kind: str):
    """after_call(k, set_index, out) for a variant, and the state it needs."""
    seen: dict[int, int] = {}
    samples: dict[int, list] = {}
    copy_s = [0.0]

    def chosen(set_index: int) -> bool:
        seen[set_index] = seen.get(set_index, 0) + 1
        return int.from_bytes(os.urandom(4), "little") % seen[set_index] == 0

    def after(k, set_index, out):
        if not chosen(set_index):
            return
        if kind in ("cpu_sample", "cpu_sample_nogc"):
            t0 = time.perf_counter()
            samples[set_index] = worker._to_cpu([out])  # the synchronous copy the worker made before 481d272 (2026-11-21)
            copy_s[0] = time.perf_counter() - t0
        elif kind == "idle":
            time.sleep(copy_s[0] or 0.02)
        elif kind == "gpu_sample":
            samples[set_index] = worker._snapshot([out])  # the worker's sample now
    return (after if kind != "none" else None), copy_s


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n", type=int, default=4096 * 4096)
    ap.add_argument("--budget", type=float, default=0.5)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(0)
    sets = [[torch.randn(args.n, device=dev, generator=gen) for _ in range(2)] for _ in range(N_SETS)]
    warm = [[torch.randn(args.n, device=dev, generator=gen) for _ in range(2)] for _ in range(2)]
    for s in sets:
        for t in s:
            t.sum()
    kernels = _kernels()
    variants = ["none", "cpu_sample", "cpu_sample_nogc", "idle", "gpu_sample"]
    rows = []
    with open(out / "first_round.jsonl", "w") as f:
        for name, fn in kernels.items():
            fn(*warm[0])  # compile
            for variant in variants:
                copy_s = [0.0]
                for r in range(args.repeats):
                    after, cs = _sampler(variant)
                    if variant == "idle":
                        cs[0] = copy_s[0]
                    if variant.endswith("nogc"):
                        gc.disable()
                    try:
                        t = time_cuda(fn, sets, warmup_sets=warm, after_call=after, budget_s=args.budget, device_clock=False)
                    finally:
                        gc.enable()
                    if variant == "cpu_sample":
                        copy_s = cs
                    row = {"kernel": name, "variant": variant, "repeat": r, "first_round_ms": t.first_round_ms,
                           "median_ms": t.median_ms, "ratio": t.median_ms / t.first_round_ms, "n_trials": t.n_trials,
                           "copy_ms": cs[0] * 1e3}
                    rows.append(row)
                    f.write(json.dumps(row) + "\n")
                    f.flush()
                    print(json.dumps(row), flush=True)
    print(f"\n{'kernel':8} {'variant':16} {'first ms':>24} {'median ms':>10} {'min ratio':>9}")
    for name in kernels:
        for variant in variants:
            rs = [r for r in rows if r["kernel"] == name and r["variant"] == variant]
            firsts = " ".join(f"{r['first_round_ms']:.4f}" for r in rs)
            print(f"{name:8} {variant:16} {firsts:>24} {statistics.median(r['median_ms'] for r in rs):10.4f} "
                  f"{min(r['ratio'] for r in rs):9.2f}")


if __name__ == "__main__":
    main()
