"""The kernel lab: judge a kernel written in a notebook cell.

    %load_ext kbench_lib.lab

    %%kbench level1/51_ReLU --device cpu --protocol kbench
    import torch, torch.nn as nn
    class ModelNew(nn.Module):
        ...

The cell below the magic's line is the candidate. It is judged as every other candidate is
(:func:`kbench_lib.judge.judge`: built and run in an isolated worker process, never in the
notebook's own), the verdict is shown (each configuration with its ``tol_needed``, the failure from
the candidate's own lines, flags, speedups with the spread of both clocks, the fraction of the
speed of light, the heaviest kernels beside the reference's), appended to a lab run (parquet, like
any run, with the candidate's source: ``results/runs/lab-<date>/`` unless ``--run-id`` or
``--runs-root`` say otherwise) and returned as the dict ``kbench eval --json`` prints, so that
``v = _`` works. The options are ``kbench eval``'s (``--backend``, ``--device``, ``--precision``,
``--protocol``, ``--time-variants``, ``--no-timing``, ...) plus ``--run-id`` and ``--runs-root``.

A problem is a file or a key (``level1/51_ReLU``, a stem, ``level1/51``) under ``problems/``. An
unknown problem or option, or an empty cell, is one line in the cell's output, never a traceback
of the harness; a candidate that does not parse, defines no ``ModelNew``, crashes or hangs ends as
its failure category, and the notebook's kernel stays alive. An interrupt (the notebook's stop
button) ends the judgement and its worker process.
"""
from __future__ import annotations

import argparse
import datetime as dt
import html
import itertools
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class LabError(Exception):
    """A cell the lab cannot judge (unknown problem or option, empty cell): one line to the user."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print the usage and exit the kernel
        raise LabError(message)


def parser() -> argparse.ArgumentParser:
    from .cli import _add_judge_args

    p = _Parser(prog="%%kbench", add_help=False)
    p.add_argument("problem")
    p.add_argument("--backend", choices=["cuda", "triton", "cpp", "torch"], default=None)
    p.add_argument("--run-id", default=None, help="the lab run the attempt is recorded in (default lab-<date>)")
    p.add_argument("--runs-root", default=None)
    _add_judge_args(p)
    return p


def problem_of(name: str):
    """The problem a cell names: a file, or a key under the repository's ``problems/``."""
    from .problems import ProblemError, find_problem, load_problem

    path = Path(name).expanduser()
    try:
        if path.suffix == ".py":
            if not path.exists():
                raise LabError(f"no problem file {name}")
            return load_problem(path)
        return find_problem(REPO / "problems", name)
    except ProblemError as e:
        raise LabError(str(e)) from None


def judge_cell(line: str, cell: str) -> dict:
    """Judges ``cell`` on the problem and options of ``line``; records and returns the verdict."""
    from .candidates import Candidate, detect_backend
    from .cli import _judge_options, _timing_kind

    try:
        a = parser().parse_args(shlex.split(line))
    except ValueError as e:  # shlex: an unclosed quote
        raise LabError(f"cannot read the options: {e}") from None
    if not cell.strip():
        raise LabError("the cell holds no candidate: write a ModelNew below the %%kbench line")
    problem = problem_of(a.problem)
    source = cell if cell.endswith("\n") else cell + "\n"
    candidate = Candidate(source=source, backend=a.backend or detect_backend(source), name="lab")
    verdict = _judge(problem, candidate, _judge_options(a))
    d = verdict.to_dict()
    d["timing"] = _timing_kind(verdict)
    d["attempt"], d["run_id"] = _record(verdict, problem, candidate, a)
    return d


def _judge(problem, candidate, opts):
    from .judge import JudgeError, judge

    try:
        return judge(problem, candidate, opts)
    except JudgeError as e:
        raise LabError(f"the judge could not run: {e}") from None


def _record(verdict, problem, candidate, a) -> tuple[int, str]:
    """Appends the attempt to the lab run; returns (attempt number, run id)."""
    from .records import RecordWriter, read_records, row_from_verdict
    from .runner import RUNS_ROOT

    root = Path(a.runs_root) if a.runs_root else RUNS_ROOT
    run_id = a.run_id or f"lab-{dt.date.today().isoformat()}"
    attempt = len(read_records(root, run_id)) if (root / run_id).exists() else 0
    row = row_from_verdict(verdict, run_id=run_id, model="lab", strategy="lab", sample=attempt,
                           extra={"candidate_source": candidate.source, "problem_path": str(problem.path)})
    RecordWriter(root, run_id).append(row)
    return attempt, run_id


def render(d: dict) -> str:
    """The verdict as HTML: status, message, configurations, flags, times, profile."""
    esc = html.escape
    ok = d.get("correct") and not d.get("flags")
    status = "CORRECT" if d.get("correct") else f"FAILED ({d.get('failure')})"
    color = "#2a9d8f" if ok else "#e9c46a" if d.get("correct") else "#e76f51"
    parts = [f"<div><b style='color:{color}'>{esc(status)}</b> &nbsp; {esc(str(d.get('problem')))} "
             f"[{esc(str(d.get('backend')))} on {esc(str(d.get('device_name')))}, {esc(str(d.get('precision')))}, "
             f"protocol {esc(str(d.get('protocol')))}]"
             + (f" &nbsp; cause: <b>{esc(d['cause'])}</b>" if d.get("cause") and d.get("cause") != d.get("failure") else "")
             + f" &nbsp; <small>attempt {d.get('attempt')} of run {esc(str(d.get('run_id')))}</small></div>"]
    if d.get("message"):
        parts.append(f"<pre style='white-space:pre-wrap'>{esc(d['message'][:3000])}</pre>")
    parts += [f"<div>FLAG {esc(f)}</div>" for f in d.get("flags") or []]
    parts.append(_times(d))
    parts.append(_configs_table(d.get("configs") or []))
    parts.append(_kernels_table(d))
    return "\n".join(p for p in parts if p)


def _times(d: dict) -> str:
    if d.get("runtime_ms") is None:
        return ""
    stats, base = d.get("runtime_stats") or {}, d.get("baseline_stats") or {}

    def spread(s: dict) -> str:
        return f" (p10-p90 {s['p10_ms']:.4g}-{s['p90_ms']:.4g})" if s.get("p10_ms") is not None and s.get("p90_ms") is not None else ""

    text = f"runtime {d['runtime_ms']:.4g} ms{spread(stats)}"
    if d.get("baseline_ms"):
        text += f" &nbsp; eager {d['baseline_ms']:.4g} ms{spread(base)}"
    if d.get("timing") != "gpu":
        return f"<div>{text} &nbsp; <i>timed by {html.escape(str(d.get('timing')))}: no kernel speedup</i></div>"
    if d.get("speedup"):
        text += f" &nbsp; <b>{d['speedup']:.3g}x</b> over eager"
    if d.get("speedup_compile"):
        text += f", {d['speedup_compile']:.3g}x over torch.compile ({d['baseline_compile_ms']:.4g} ms)"
    if d.get("sol_ms"):
        text += f" &nbsp; {d['sol_ms'] / d['runtime_ms']:.0%} of the speed of light ({d['sol_ms']:.4g} ms)"
    if (stats.get("device_ms")):
        text += f" &nbsp; device-busy {stats['device_ms']:.4g} ms"
    return f"<div>{text}</div>"


def _configs_table(configs: list) -> str:
    from .protocols import config_state

    if not configs:
        return ""
    rows = []
    for c in configs:
        state = config_state(c)
        num = lambda x: "" if x is None else f"{x:.3g}"  # noqa: E731
        rows.append(f"<tr><td>{html.escape(c['config'])}</td><td>{c['kind']}</td><td>{html.escape(state)}</td>"
                    f"<td>{num(c.get('tol_needed'))}</td><td>{num(c.get('max_abs_err'))}</td><td>{num(c.get('ref_tf32_tol'))}</td>"
                    f"<td>{html.escape(c.get('reason') or '')}</td></tr>")
    head = "<tr><th>configuration</th><th>kind</th><th></th><th>tol_needed</th><th>max abs err</th><th>reference with TF32</th><th></th></tr>"
    return f"<table>{head}{''.join(rows)}</table>"


def _kernels_table(d: dict) -> str:
    """The candidate's heaviest kernels and the reference's, side by side (GPU judgements)."""
    mine = d.get("profile_kernels") or []
    ref = d.get("reference_kernels") or []
    if not mine and not ref:
        return ""

    def top(ks):
        total = sum(k.get("device_us") or 0 for k in ks) or 1.0
        return [(k["name"][:70], (k.get("device_us") or 0) / total) for k in sorted(ks, key=lambda k: -(k.get("device_us") or 0))[:6]]

    a, b = top(mine), top(ref)
    rows = "".join(f"<tr><td>{html.escape(x[0]) if x else ''}</td><td>{f'{x[1]:.0%}' if x else ''}</td>"
                   f"<td>{html.escape(y[0]) if y else ''}</td><td>{f'{y[1]:.0%}' if y else ''}</td></tr>"
                   for x, y in itertools.zip_longest(a, b))
    return (f"<table><tr><th>candidate's kernels ({d.get('n_kernels')})</th><th>share</th>"
            f"<th>reference's kernels ({d.get('reference_n_kernels')})</th><th>share</th></tr>{rows}</table>")


def options_line(problem, device: str, protocol: str = "kbench", run_id: str | None = None, runs_root=None,
                 timing: bool = True, timing_budget_s: float | None = None) -> str:
    """The ``%%kbench`` line for ``problem`` with these options (the lab notebook's parameters)."""
    parts = [str(problem.path), "--device", device, "--protocol", protocol]
    parts += ["--run-id", run_id] if run_id else []
    parts += ["--runs-root", str(runs_root)] if runs_root else []
    parts += ["--timing-budget", f"{timing_budget_s:g}"] if timing_budget_s is not None else []
    parts += [] if timing else ["--no-timing"]
    return shlex.join(parts)


def stored_baselines(problem):
    """``problem``'s baselines committed under ``results/`` (eager, torch.compile, CUDA graphs; each
    with its device) and its roofline bound ``sol_ms``."""
    from . import committed

    stored = committed.baselines()
    if not len(stored):
        return stored
    mine = stored[stored["problem"] == problem.key]
    return mine[["device_name", "mode", "runtime_ms", "runtime_p10_ms", "runtime_p90_ms", "sol_ms", "bound", "date"]]


def starter(problem) -> str:
    """A first candidate for ``problem``: its reference, renamed ``ModelNew`` (correct by
    construction, and flagged ``library_passthrough``: it writes no kernel). Replace its forward."""
    import re

    return re.sub(r"\bModel\b", "ModelNew", problem.source)


def kbench(line: str, cell: str):
    """The ``%%kbench`` cell magic (module docstring)."""
    from IPython.display import HTML, display

    try:
        d = judge_cell(line, cell)
    except LabError as e:
        print(f"%%kbench: {e}")
        return None
    display(HTML(render(d)))
    return d


def load_ipython_extension(ipython) -> None:
    ipython.register_magic_function(kbench, magic_kind="cell", magic_name="kbench")


__all__ = ["LabError", "judge_cell", "kbench", "load_ipython_extension", "options_line", "parser", "problem_of", "render", "starter",
           "stored_baselines"]
