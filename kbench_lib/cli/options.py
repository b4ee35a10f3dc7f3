"""What the judging commands share: the judge's options and their flags, the problems a command selects."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..measure.trials import BUDGET_S

REPO = Path(__file__).resolve().parents[2]  # beside kbench_lib/: problems/ and results/ live there


def judge_options(a):
    """The judge's options from the flags :func:`add_judge_args` adds."""
    from ..judging.pipeline import JudgeOptions

    return JudgeOptions(
        device=a.device, precision=a.precision, small=a.small, n_seeds=a.seeds, seed=a.seed,
        build_timeout_s=a.build_timeout, run_timeout_s=a.run_timeout, idle_timeout_s=a.idle_timeout, timing=not a.no_timing,
        timing_budget_s=a.timing_budget, compile_baseline=a.compile_baseline, time_variants=a.time_variants,
        protocol=a.protocol, reference_store=False if a.no_reference_store else None,
    )


def protocol_arg(name: str) -> str:
    """argparse type of ``--protocol``: a one-line error listing the choices for any other name."""
    from ..scoring.protocols import UnknownProtocol, check

    try:
        return check(name)
    except UnknownProtocol as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def flag_policy_arg(name: str) -> str:
    """argparse type of ``--trust``: a one-line error listing the choices for any other name."""
    from ..scoring.flags import UnknownFlagPolicy, check_policy

    try:
        return check_policy(name)
    except UnknownFlagPolicy as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_judge_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help="cuda, cpu or auto (default: cuda when available)")
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    size = p.add_mutually_exclusive_group()
    size.add_argument("--small", dest="small", action="store_true", default=None, help="use SMALL configurations (default on the CPU)")
    size.add_argument("--full", dest="small", action="store_false", help="use full-size configurations (default on a GPU)")
    p.add_argument("--seeds", type=int, default=5, help="fresh input sets for the default configuration (default 5)")
    p.add_argument("--seed", type=int, default=None, help="base seed (default: drawn fresh each time)")
    p.add_argument("--build-timeout", type=float, default=300.0, help="seconds (default 300)")
    p.add_argument("--run-timeout", type=float, default=180.0, help="seconds per candidate (default 180)")
    p.add_argument("--idle-timeout", type=float, default=10.0,
                   help="end a candidate whose processes use no CPU time for this many seconds: a sleeping or blocked hang "
                        "(default 10; 0: only --run-timeout)")
    p.add_argument("--timing-budget", type=float, default=BUDGET_S, help=f"seconds of timed trials at most (default {BUDGET_S:g})")
    p.add_argument("--no-timing", action="store_true", help="no timed calls and no speedup; correctness and every guard as with timing (the forward is still profiled once)")
    p.add_argument("--compile-baseline", action="store_true", help="measure torch.compile when no stored baseline exists")
    p.add_argument("--time-variants", action="store_true",
                   help="also time the candidate and the eager baseline on every variant (per-variant speedups; costs a timing run per variant)")
    p.add_argument("--no-reference-store", action="store_true",
                   help="measure the eager baseline and the reference's profile again rather than read them from the reference store "
                        "(on a GPU, $KBENCH_REFERENCE_STORE or $KBENCH_CACHE/reference; docs/JUDGING.md)")
    p.add_argument("--protocol", type=protocol_arg, default="kbench", metavar="{kbench,kernelbench,kernelbench-v0,cuda-l1}",
                   help="which configurations at which tolerance decide correct: kbench (every configuration in training mode; "
                        "default), kernelbench (the declared shape, fp32 1e-4), kernelbench-v0 (the declared shape, 1e-2 for every "
                        "precision), cuda-l1 (the declared shape in eval mode under no_grad, 1e-2; timed in eval mode); every "
                        "configuration is checked and recorded whatever it is (docs/PROTOCOLS.md)")


def problems_path_refused(a) -> str | None:
    """Why a command refuses its ``problems`` path (one line: it does not exist), or None; told by
    :func:`kbench_lib.cli.main` before the command runs."""
    return None if Path(a.problems).exists() else f"no such problem folder or file: {a.problems}"


def selected_problems(a, verb: str) -> list | None:
    """The problems under ``a.problems`` (a path :func:`problems_path_refused` let through) kept by
    ``--filter`` and ``--limit``; malformed files are reported and skipped. None after a one-line
    error: no problem left to run."""
    from ..suite.problems import discover_with_errors, select

    problems, errors = discover_with_errors(a.problems)
    for path, err in errors:
        print(f"kbench {verb}: skipping malformed problem {path}: {err}", file=sys.stderr)
    kept = select(problems, a.filter, a.limit)
    if not kept:
        which = f" matches --filter {' '.join(a.filter)}" if a.filter and problems else ""
        print(f"kbench {verb}: no problem under {a.problems}{which}", file=sys.stderr)
        return None
    return kept
