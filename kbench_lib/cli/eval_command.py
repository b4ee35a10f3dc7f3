"""``kbench eval PROBLEM CANDIDATE``: one candidate judged, its verdict printed (``--json``: as one JSON
object on the last line). Exits 0 whenever a verdict was reached, correct or not."""
from __future__ import annotations

import json
import sys

from ..core.candidates import BACKENDS
from .options import REPO, add_judge_args, judge_options


def add_parser(sub) -> None:
    """``kbench eval PROBLEM CANDIDATE``: one candidate judged."""
    p = sub.add_parser("eval", help="judge one candidate against one problem")
    p.add_argument("problem", help="a problem file, or a key under problems/ (level1/51_ReLU), as the lab takes")
    p.add_argument("candidate")
    p.add_argument("--backend", choices=BACKENDS, default=None, help="default: detected from the source")
    p.add_argument("--json", action="store_true")
    add_judge_args(p)
    p.set_defaults(fn=command, refused=refused)


def command(a) -> int:
    from ..core.candidates import load_candidate
    from ..judging.pipeline import JudgeError, judge
    from ..suite.problems import ProblemError, resolve

    try:
        problem = resolve(a.problem, REPO / "problems")
        candidate = load_candidate(a.candidate, a.backend)
    except (ProblemError, OSError, ValueError) as e:
        print(f"kbench eval: {e}", file=sys.stderr)
        return 2
    try:
        verdict = judge(problem, candidate, judge_options(a))
    except JudgeError as e:
        print(f"kbench eval: the judge could not run: {e}", file=sys.stderr)
        return 3
    from ..reports.verdict_text import verdict_lines
    from ..scoring.flags import classes

    d = verdict.to_dict()
    d["timing"] = timing_kind(verdict)
    d["flag_classes"] = classes(verdict.flags)  # cheat, hazard or shortcut, one per flag (docs/THREAT_MODEL.md)
    if a.json:
        print(json.dumps(d, default=str))
    else:
        for line in verdict_lines(verdict, problem, candidate, d["timing"]):
            print(line)
    return 0


def refused(a) -> str | None:
    """Why ``kbench eval`` refuses its arguments (one line), or None: a problem file or candidate
    file that does not exist, a problem key that names no problem under ``problems/`` (the files
    are read, not run)."""
    from pathlib import Path

    from ..suite.problems import ProblemError, find_problem

    if a.problem.endswith(".py"):
        if not Path(a.problem).expanduser().is_file():
            return f"cannot read problem file {a.problem}: no such file"
    else:
        try:
            find_problem(REPO / "problems", a.problem)
        except ProblemError as e:
            return str(e)
    if not Path(a.candidate).is_file():
        return f"cannot read candidate file {a.candidate}: no such file"
    return None


def timing_kind(verdict) -> str:
    """Where the verdict's times come from (the rule of :func:`kbench_lib.scoring.metrics.timing_kind`)."""
    import pandas as pd

    from ..scoring.metrics import timing_kind

    row = {"device": verdict.device, "small": verdict.small, "backend": verdict.backend}
    return str(timing_kind(pd.DataFrame([row])).iloc[0])
