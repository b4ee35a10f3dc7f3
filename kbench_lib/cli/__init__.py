"""The ``kbench`` command line.

    kbench eval PROBLEM_FILE CANDIDATE_FILE [--backend ...] [--device ...] [--precision ...] [--json]
    kbench run  PROBLEMS [--model SPEC] [--samples K] [--cache live|replay|refresh] [--run-id ID] [--ray [ADDRESS|auto]] ...
                [--strategy single|refine|evolve|verify] [--verify ...] [--turns T] [--generations G] [--budget-* N]
    kbench audit cuda-l1:PATH [--protocol ...] [--build-jobs N]
    kbench lint PATH [--small] [--device ...] [--json]
    kbench baselines [PROBLEMS] [--modes eager compile cudagraph]
    kbench index [PROBLEMS] [--out problems/index.csv]
    kbench serve [--status | --stop]

One module per command (:mod:`.eval_command`, :mod:`.run_command`, :mod:`.audit_command`,
:mod:`.serve_command`; :mod:`.suite_commands` for lint, baselines and index), each with its
``add_parser``, the command and, where its arguments can name nothing, ``refused``; what they share
in :mod:`.options`. Here: the parser and :func:`main`.

``eval`` exits 0 whenever a verdict was reached (correct or not) and non-zero only when the judge
itself could not run; with ``--json`` the last line on stdout is the verdict as one JSON object.
"""
from __future__ import annotations

import argparse
import faulthandler
import sys

from . import audit_command, eval_command, run_command, serve_command, suite_commands

FORWARDED = ("eval", "run", "audit")  # the commands the judge service runs (docs/SERVICE.md)


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    ap = argparse.ArgumentParser(prog="kbench", description="Build, judge and record machine-written GPU kernels.")
    ap.add_argument("--version", action="version", version=f"kbench {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for add in (eval_command.add_parser, run_command.add_parser, audit_command.add_parser, suite_commands.add_lint_parser,
                suite_commands.add_baselines_parser, suite_commands.add_index_parser, serve_command.add_parser):
        add(sub)
    return ap


def main(argv: list[str] | None = None, forward: bool = True) -> int:
    """``kbench``: the command ``argv`` (default ``sys.argv[1:]``). ``eval``, ``run`` and ``audit`` are
    handed to the judge service where ``forward`` (docs/SERVICE.md), after their arguments are
    read here: an error in them, and a command's ``refused`` (a model, file or corpus that does not
    exist), is reported at once, no service started; ``--ray`` batches run here."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    refused = getattr(args, "refused", None)
    why = refused(args) if refused is not None else None
    if why:  # one line, told before the judge service is asked (or started) or anything is loaded
        print(f"kbench {args.cmd}: {why}", file=sys.stderr)
        return 2
    if forward and args.cmd in FORWARDED and getattr(args, "ray", None) is None:
        from ..service.client import forward as to_service

        code = to_service(argv)
        if code is not None:
            return code
    if not faulthandler.is_enabled():  # a crash of the judge itself (not a candidate's) shows every thread's stack
        faulthandler.enable(all_threads=True)
    try:
        return args.fn(args)
    except KeyboardInterrupt:  # the verdicts recorded so far are kept; the same --run-id goes on from them
        print("kbench: interrupted", file=sys.stderr)
        return 130

