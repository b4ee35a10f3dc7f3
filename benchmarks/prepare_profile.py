"""Where a problem's preparation goes: cProfile of ``prepare()`` (the reference side a batch makes once
per problem: fresh-seed models, expected outputs, fingerprints), its second call in one process, so
that what is cached per process (imports, CUDA context, kernels) is left out. The reference store is
off: with it, a batch reads the roofline count and the baselines instead of measuring them.

On a GPU machine:

    python3 benchmarks/prepare_profile.py --problems 47 43 2 > results/benchmarks/<device>/prepare_profile-<date>.txt

(``--problems`` takes level-3 problem numbers; ``--level`` another level.) For each problem: the
first and second call's seconds, then the second call's 28 heaviest functions by cumulative time and
12 by own time.
"""
from __future__ import annotations

import argparse
import cProfile
import glob
import io
import pstats
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problems", nargs="+", required=True, help="problem numbers")
    ap.add_argument("--level", default="level3")
    ap.add_argument("--device", default="cuda:0")
    args = ap.parse_args()

    import torch

    from kbench_lib.judging.pipeline import JudgeOptions
    from kbench_lib.judging.prepared import prepare
    from kbench_lib.suite.problems import load_problem

    if args.device.startswith("cuda"):
        torch.cuda.set_device(torch.device(args.device))
        x = torch.randn(1000, 1000, device=args.device)
        (x @ x).sum().item()  # the context and the first kernels, outside the figures
    opts = JudgeOptions(device=args.device, reference_store=False)
    for number in args.problems:
        path = sorted(glob.glob(str(REPO / "problems" / args.level / f"{number}_*.py")))[0]
        problem = load_problem(path, args.level)
        t0 = time.monotonic()
        prepare(problem, args.device, opts, small=False)
        first = time.monotonic() - t0
        prof = cProfile.Profile()
        t0 = time.monotonic()
        prof.enable()
        prep = prepare(problem, args.device, opts, small=False)
        prof.disable()
        second = time.monotonic() - t0
        print(f"== {Path(path).stem}: first {first:.2f} s, second {second:.2f} s, cases {len(prep.cases)}", flush=True)
        for key, n in (("cumulative", 28), ("tottime", 12)):
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats(key).print_stats(n)
            print("\n".join(line[:150] for line in out.getvalue().splitlines()[6:6 + n + 6]), flush=True)


if __name__ == "__main__":
    main()
