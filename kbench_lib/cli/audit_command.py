"""``kbench audit CORPUS``: a published corpus judged once, its claims set beside the measured speed
and kbench's verdict (summary row, per-kernel table, figures)."""
from __future__ import annotations

import json
import sys

from ..measure.trials import BUDGET_S
from .options import REPO, protocol_arg


def add_parser(sub) -> None:
    """``kbench audit CORPUS``: a published corpus judged once, its claims set beside what was measured."""
    from ..core.paths import RUNS_ROOT

    p = sub.add_parser("audit", help="judge a published corpus (cuda-l1:PATH) once and set its claims beside the measured speed and kbench's verdict")
    p.add_argument("corpus", help="cuda-l1:PATH (CUDA-L1's release format)")
    p.add_argument("--device", default="auto")
    p.add_argument("--protocol", type=protocol_arg, default="cuda-l1", help="the corpus's own protocol (default cuda-l1); kbench's is read from the same records")
    p.add_argument("--run-id", default=None, help="a run to resume (default: a new one)")
    p.add_argument("--runs-root", default=str(RUNS_ROOT))
    p.add_argument("--timing-budget", type=float, default=BUDGET_S, help=f"seconds of timed trials at most per candidate (default {BUDGET_S:g})")
    p.add_argument("--build-jobs", type=int, default=None, help="build this many candidates in parallel while judging goes on (default: on a GPU "
                   "every core but two, at most 16; on the CPU one at a time)")
    p.add_argument("--filter", nargs="*", default=None, help="keep tasks whose key contains any of these")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--out-dir", default=str(REPO / "results" / "benchmarks"), help="the summary row and the per-kernel table go under <out-dir>/<device>/")
    p.add_argument("--figures-dir", default=str(REPO / "results" / "figures"), help="the figures go under <figures-dir>/<device>/")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(fn=command, refused=refused)


def command(a) -> int:
    from .. import workflows
    from ..analysis import audit
    from ..generation.corpus import CorpusError

    try:
        run_id, df, wall_s = workflows.audit(a.corpus, device=a.device, run_id=a.run_id, runs_root=a.runs_root, protocol=a.protocol,
                                             timing_budget_s=a.timing_budget, limit=a.limit, filters=a.filter, build_jobs=a.build_jobs,
                                             progress=not a.quiet)
    except CorpusError as e:
        print(f"kbench audit: {e}", file=sys.stderr)
        return 2
    made = audit.audit_outputs(df, a.corpus, a.out_dir, a.figures_dir, wall_s, a.protocol)
    summary = json.loads(made["summary"][0].read_text())
    print(f"audit {run_id}: {summary['kernels']} kernels ({summary['with_code']} with code) on {summary['device_name']} in {wall_s:.0f} s")
    print(f"  claimed mean {_num(summary['claimed_mean'])}x, median {_num(summary['claimed_median'])}x; reproduced under "
          f"{a.protocol} mean {_num(summary['reproduced_mean'])}x, median {_num(summary['reproduced_median'])}x "
          f"({summary['reproduced_n']} kernels correct and timed on a GPU)")
    print(f"  kbench fast_0 {_num(summary['kbench_fast_0_strict'])} / fast_1 {_num(summary['kbench_fast_1_strict'])} (strict), "
          f"{_num(summary['kbench_fast_0_no_cheat'])} / {_num(summary['kbench_fast_1_no_cheat'])} (no-cheat)")
    print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in summary["by_outcome"].items() if v))
    for files in made.values():
        for f in files:
            print(f"  wrote {f}")
    return 0


def refused(a) -> str | None:
    """Why ``kbench audit`` refuses its corpus (one line), or None."""
    from ..generation import corpus

    return corpus.spec_error(a.corpus)


def _num(x) -> str:
    return "-" if x is None else f"{x:.3g}"
