"""Does the size-constant rule work across the whole suite? Derives variants for every problem as
if it declared none (its declared VARIANTS / SMALL_VARIANTS ignored), validates them on the device
with lint's checks, and reports how many problems get two, what was dropped and why, the peak
memory of each derived variant against its base configuration (full size on a GPU), and the
seconds spent. Not a test: prints a summary and writes JSON lines.

    python benchmarks/derived_variants.py --small --device cpu --out derived_small.jsonl
    python benchmarks/derived_variants.py --full --device cuda --out derived_full.jsonl
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kbench_lib import variants  # noqa: E402
from kbench_lib.lint import LintReport, check_config  # noqa: E402
from kbench_lib.problems import discover  # noqa: E402


def base_peak(problem, small: bool, device: str) -> int | None:
    """Peak GPU bytes of the base configuration (None on the CPU)."""
    if not device.startswith("cuda"):
        return None
    report = LintReport(problem.key)
    check_config(problem, problem.declared_configs(small)[0], device, report, check_size=False)
    return report.configs[-1].get("peak_bytes") if report.configs else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="?", default=str(REPO / "problems"))
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--small", dest="small", action="store_true", default=True)
    size.add_argument("--full", dest="small", action="store_false")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--filter", nargs="*", default=None)
    ap.add_argument("--out", default=None, help="append one JSON line per problem")
    a = ap.parse_args()
    problems = [p for p in discover(a.problems) if not a.filter or any(f in p.key for f in a.filter)]
    started, short, over = time.monotonic(), [], []
    for p in problems:
        t0 = time.monotonic()
        d = variants.derive(p, a.small, a.device, fresh=True)
        row = {"problem": p.key, "seconds": round(time.monotonic() - t0, 2), "size_constants": d.size_constants,
               "derived": [c.overrides for c in d.configs], "notes": d.notes}
        peak = base_peak(p, a.small, a.device)
        if peak is not None:
            row["base_peak_bytes"] = peak
            row["derived_peak_bytes"] = [i.get("peak_bytes") for i in d.infos]
            if any(b and b > peak * 1.05 for b in row["derived_peak_bytes"]):
                over.append(p.key)
        if len(d.configs) < variants.N_DERIVED:
            short.append(p.key)
        print(f"{p.key}: {len(d.configs)} derived, {sum('dropped' in n for n in d.notes)} dropped, {row['seconds']} s", flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(row, default=str) + "\n")
    print(f"\n{len(problems)} problems, {len(problems) - len(short)} with {variants.N_DERIVED} derived variants, "
          f"{time.monotonic() - started:.1f} s; fewer: {short}")
    if over:
        print(f"derived variant above its base's peak memory (+5%): {over}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
