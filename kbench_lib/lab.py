"""The kernel lab: judge a kernel written in a notebook cell.

    %load_ext kbench_lib.lab

    %%kbench level1/51_ReLU --device cpu --protocol kbench
    import torch, torch.nn as nn
    class ModelNew(nn.Module):
        ...

The cell below the magic's line is the candidate. It is judged as every other candidate is
(:func:`kbench_lib.judging.pipeline.judge`: built and run in an isolated worker process, never in the
notebook's own), the verdict is shown (each configuration with its ``tol_needed``, the failure from
the candidate's own lines, flags, speedups with the spread of both clocks, the fraction of the
speed of light, the heaviest kernels beside the reference's), appended to a lab run (parquet, like
any run, with the candidate's source: ``results/runs/lab-<date>/`` unless ``--run-id`` or
``--runs-root`` say otherwise) and returned as the dict ``kbench eval --json`` prints, so that
``v = _`` works. The options are ``kbench eval``'s (``--backend``, ``--device``, ``--precision``,
``--protocol``, ``--time-variants``, ``--no-timing``, ...) plus ``--run-id``, ``--runs-root`` and
``--background``.

A problem is a file or a key (``level1/51_ReLU``, a stem, ``level1/51``) under ``problems/``. An
unknown problem or option, or an empty cell, is one line in the cell's output, never a traceback
of the harness; a candidate that does not parse, defines no ``ModelNew``, crashes or hangs ends as
its failure category, and the notebook's kernel stays alive.

Waiting or not. By default the cell waits for its verdict (what papermill and nbval need: nothing
runs between their cells, so a verdict left for later would never reach the notebook). With
``--background`` the cell returns at once a :class:`LabJudgement`: its display is a progress bar
with the stage (the reference, the build, the worker's load, correctness case, profile, timing,
then the checks) and the time so far, replaced by the rendered verdict when it is done; other
cells run meanwhile. ``h = _`` keeps the handle: ``h.result()`` waits for the verdict dict,
``h.verdict`` is it (None until then), ``h.cancel()`` ends the judgement.

Either way the judgement runs on a thread of its own (the candidate, as always, in the judge's
isolated worker processes, never in the notebook's; the reference side, as before, in the
notebook's process, on that thread). An interrupt (the notebook's stop button) while
a cell waits, or ``cancel()`` on a handle, ends it: the judge's thread is interrupted wherever it is
(a reference case, the build, the worker's run, the checks), the worker's whole process session is
killed, and **nothing is recorded**: a cancelled attempt has no verdict, so the lab run keeps only
judged attempts, numbered without gaps. The cell says so in one line and the kernel stays alive.
A verdict being recorded is never interrupted: once the judge has returned, a cancel comes too late
and the attempt is recorded whole. The interruption lands at the thread's next Python
instruction: one long call into C (a large reference case) ends first; ``cancel()`` waits for the
thread up to its ``timeout`` and the thread, still cancelled, records nothing when it ends.
"""
from __future__ import annotations

import argparse
import datetime as dt
import html
import itertools
import shlex
import threading
import time
from pathlib import Path

from .core.thread_stop import raise_in

REPO = Path(__file__).resolve().parent.parent


class LabError(Exception):
    """A cell the lab cannot judge (unknown problem or option, empty cell): one line to the user."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print the usage and exit the kernel
        raise LabError(message)


def parser() -> argparse.ArgumentParser:
    from .cli.options import add_judge_args
    from .core.candidates import BACKENDS

    p = _Parser(prog="%%kbench", add_help=False)
    p.add_argument("problem")
    p.add_argument("--backend", choices=BACKENDS, default=None)
    p.add_argument("--run-id", default=None, help="the lab run the attempt is recorded in (default lab-<date>)")
    p.add_argument("--runs-root", default=None)
    p.add_argument("--background", action="store_true", help="return at once a handle that shows progress, then the verdict")
    add_judge_args(p)
    return p


def problem_of(name: str):
    """The problem a cell names: a file, or a key under the repository's ``problems/``."""
    from .suite.problems import ProblemError, resolve

    try:
        return resolve(name, REPO / "problems")
    except ProblemError as e:
        raise LabError(str(e)) from None


def _read_cell(line: str, cell: str):
    """The options, problem and candidate of a cell; :class:`LabError` for a cell the lab cannot judge."""
    from .core.candidates import Candidate, detect_backend

    try:
        a = parser().parse_args(shlex.split(line))
    except ValueError as e:  # shlex: an unclosed quote
        raise LabError(f"cannot read the options: {e}") from None
    if not cell.strip():
        raise LabError("the cell holds no candidate: write a ModelNew below the %%kbench line")
    problem = problem_of(a.problem)
    source = cell if cell.endswith("\n") else cell + "\n"
    candidate = Candidate(source=source, backend=a.backend or detect_backend(source), name="lab")
    return a, problem, candidate


def start_cell(line: str, cell: str) -> "LabJudgement":
    """Starts judging ``cell`` on the problem and options of ``line`` on a thread of its own."""
    from .cli.options import judge_options

    a, problem, candidate = _read_cell(line, cell)
    return LabJudgement(problem, candidate, judge_options(a), a)


def judge_cell(line: str, cell: str) -> dict:
    """Judges ``cell`` on the problem and options of ``line``; records and returns the verdict
    (waits for it; :class:`LabError` if the judge could not run)."""
    return start_cell(line, cell).result()


class LabVerdict(dict):
    """The verdict dict a cell returns (``kbench eval --json``'s keys, with ``attempt`` and
    ``run_id``): a plain dict, shown as one line below the rendered verdict rather than all its keys."""

    def _repr_pretty_(self, p, cycle) -> None:
        status = "CORRECT" if self.get("correct") else f"FAILED ({self.get('failure')})"
        p.text(f"<kbench verdict of {self.get('problem')}: {status}, attempt {self.get('attempt')} of run {self.get('run_id')}; "
               f"a dict of {len(self)} keys>")


class _Cancelled(KeyboardInterrupt):
    """Raised in a judgement's thread by :meth:`LabJudgement.cancel`: a KeyboardInterrupt, so the
    judge's own clean-up on an interrupt (its workers' sessions killed) runs, and no ``except
    Exception`` of the harness takes it for a failure."""


STAGES = ("reference", "build", "load", "correctness", "profile", "timing", "checks", "record")
_WORKER_STAGE = {"gate": "timing", "variant_timing": "timing"}
_RECORDING = threading.Lock()  # two judgements ending together must not take the same attempt number
_RUNNING: "set[LabJudgement]" = set()  # the judgements under way in this process (running())
_RUNNING_LOCK = threading.Lock()


def running() -> list["LabJudgement"]:
    """The judgements under way in this kernel, oldest first (``[h.cancel() for h in running()]``
    ends them all)."""
    with _RUNNING_LOCK:
        return sorted(_RUNNING, key=lambda h: h.started)


class LabJudgement:
    """One ``%%kbench`` judgement under way, on a thread of its own: ``stage``, ``elapsed_s``,
    ``done``; :meth:`result` waits for the verdict dict, :attr:`verdict` is it (None until then);
    :meth:`cancel` ends it (nothing recorded). Displayed, it is a progress bar and the stage,
    replaced by the rendered verdict when done."""

    def __init__(self, problem, candidate, opts, a):
        self.problem, self.candidate, self.opts, self.args = problem, candidate, opts, a
        self.started = time.monotonic()
        self.ended: float | None = None
        self.verdict: dict | None = None
        self.error: str | None = None  # the one line of a judgement that could not run
        self.cancelled = False
        self._cancelled_at: str | None = None  # the stage it was cancelled in
        self._stage = "reference"
        self._judgement = None  # kbench_lib.judging.pipeline.Judgement, once its worker started
        self._lock = threading.Lock()
        self._judging = True  # cancel() interrupts the thread only while this holds (under _lock)
        self._done = threading.Event()
        self._widget = None
        self._thread = threading.Thread(target=self._work, name=f"kbench-lab {problem.key}", daemon=True)
        with _RUNNING_LOCK:
            _RUNNING.add(self)
        self._thread.start()

    # the thread
    def _work(self) -> None:
        verdict = None
        try:
            try:
                verdict = self._judge()
            except LabError as e:
                self.error = str(e)
            with self._lock:  # from here on nothing is raised in this thread
                self._judging = False
                raise_in(threading.get_ident(), None)
        except _Cancelled:
            with self._lock:
                self._judging = False
        except BaseException as e:  # a fault of the harness: one line, the kernel lives
            with self._lock:
                self._judging = False
            self.error = f"the lab failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        try:
            if verdict is not None and not self.cancelled and self.error is None:
                self._stage = "record"
                self.verdict = self._record(verdict)
        except Exception as e:
            self.error = f"the verdict could not be recorded: {type(e).__name__}: {e}"
        finally:
            self.ended = time.monotonic()
            self._done.set()
            with _RUNNING_LOCK:
                _RUNNING.discard(self)

    def _judge(self):
        """:func:`kbench_lib.judging.pipeline.judge` up to its worker's start, then its finish (so that the stage
        can be shown and the worker reached)."""
        from .judging.pipeline import JudgeError, start_judgement
        from .judging.prepared import PreparationCancelled

        try:
            self._judgement = start_judgement(self.problem, self.candidate, self.opts, cancel=lambda: self.cancelled,
                                              on_prepared=lambda: setattr(self, "_stage", "build"))
            self._stage = "load"
            return self._judgement.finish()
        except JudgeError as e:
            raise LabError(f"the judge could not run: {e}") from None
        except PreparationCancelled:
            raise _Cancelled() from None

    def _record(self, verdict) -> dict:
        from .cli.eval_command import timing_kind

        d = LabVerdict(verdict.to_dict())
        d["timing"] = timing_kind(verdict)
        with _RECORDING:
            d["attempt"], d["run_id"] = _record(verdict, self.problem, self.candidate, self.args)
        return d

    # the caller's side
    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def elapsed_s(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    @property
    def stage(self) -> str:
        """Where the judgement is: one of :data:`STAGES` (the worker's own stage while it runs), or
        ``done``, ``cancelled``, ``failed``."""
        if self.done:
            return "cancelled" if self.cancelled else "failed" if self.error else "done"
        run = self._judgement.run if self._judgement is not None else None
        if self._stage == "load" and run is not None:
            if run.ended is not None:
                return "checks"
            last = next((m for m in reversed(list(run.messages)) if m.get("event") == "stage"), None)
            if last is not None:
                return _WORKER_STAGE.get(last.get("stage"), last.get("stage") if last.get("stage") in STAGES else "load")
        return self._stage

    def cancel(self, timeout: float = 15.0) -> bool:
        """Ends the judgement (its worker's session killed, nothing recorded) and waits up to
        ``timeout`` for its thread; True if it is cancelled (False: it had already ended, judged or not)."""
        with self._lock:
            if self._judging and not self.cancelled:
                self.cancelled, self._cancelled_at = True, self.stage
                raise_in(self._thread.ident, _Cancelled)
                run = self._judgement.run if self._judgement is not None else None
                if run is not None:  # a wait on the worker ends at once, wherever it blocks
                    run.stop()
        self._done.wait(timeout)
        return self.cancelled

    def wait(self, timeout: float | None = None) -> bool:
        """Until the judgement has ended (True) or ``timeout`` passed (False); an interrupt ends the wait, not the judgement."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._done.wait(0.1):
            if deadline is not None and time.monotonic() > deadline:
                return False
        return True

    def result(self, timeout: float | None = None) -> dict:
        """The verdict dict (``kbench eval --json``'s keys, with ``attempt`` and ``run_id``), once
        judged; :class:`LabError` if it was cancelled or could not be judged, TimeoutError after ``timeout``."""
        if not self.wait(timeout):
            raise TimeoutError(f"the judgement of {self.problem.key} is still running ({self.stage})")
        if self.cancelled:
            raise LabError("the judgement was cancelled: nothing was recorded")
        if self.error:
            raise LabError(self.error)
        return self.verdict

    def __repr__(self) -> str:
        return f"<kbench judgement of {self.problem.key}: {self.stage}, {self.elapsed_s:.1f} s>"

    # the display
    def summary(self) -> str:
        """One line: the stage and the time so far, or how it ended."""
        if not self.done:
            return f"judging {self.problem.key}: {self.stage} ({self.elapsed_s:.1f} s)"
        if self.cancelled:
            return (f"%%kbench: cancelled after {self.elapsed_s:.1f} s (in its {self._cancelled_at} stage): "
                    f"its processes were ended, nothing was recorded")
        if self.error:
            return f"%%kbench: {self.error}"
        return f"judged in {self.elapsed_s:.1f} s"

    @property
    def widget(self):
        """The ipywidgets view (made once): a progress bar and the stage, then the verdict."""
        if self._widget is None:
            import ipywidgets as w

            bar = w.IntProgress(value=0, min=0, max=len(STAGES), description="kbench", layout=w.Layout(width="40%"))
            label, body = w.Label(), w.HTML()
            self._widget = w.VBox([w.HBox([bar, label]), body])
            self._widget.add_class("kb-lab-judgement")
            self._show()
            if not self.done:
                threading.Thread(target=self._tick, name="kbench-lab progress", daemon=True).start()
        return self._widget

    def _show(self) -> None:
        (bar, label), body = self._widget.children[0].children, self._widget.children[1]
        stage = self.stage
        bar.value = len(STAGES) if stage == "done" else STAGES.index(stage) if stage in STAGES else bar.value
        bar.bar_style = {"done": "success", "cancelled": "warning", "failed": "danger"}.get(stage, "info")
        label.value = self.summary()
        if self.done:
            body.value = render(self.verdict) if self.verdict is not None else ""
            if self.verdict is not None:
                bar.layout.display = "none"

    def _tick(self) -> None:
        while not self._done.wait(0.5):
            self._show()
        self._show()

    def _ipython_display_(self) -> None:
        from IPython.display import display

        try:
            bundle = self.widget._repr_mimebundle_()
        except ImportError:  # no ipywidgets: the line, then the verdict once it is asked for
            print(self.summary())
            return
        # where no widget is drawn (a notebook's static view), the line in place of the VBox's repr
        bundle["text/plain"] = f"{self.summary()} (h = _; h.result() waits for the verdict)"
        display(bundle, raw=True)


def _record(verdict, problem, candidate, a) -> tuple[int, str]:
    """Appends the attempt to the lab run; returns (attempt number, run id)."""
    from .scoring.records import RecordWriter, read_records, row_from_verdict
    from .batch.runner import RUNS_ROOT

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
    from .scoring.protocols import config_state

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
    from .scoring import committed

    stored = committed.baselines()
    if not len(stored):
        return stored
    mine = stored[stored["problem"] == problem.key]
    return mine[["device_name", "mode", "runtime_ms", "runtime_p10_ms", "runtime_p90_ms", "sol_ms", "bound", "date"]]


def starter(problem, backend: str = "torch") -> str:
    """A first candidate for ``problem``: its reference, renamed ``ModelNew`` (correct by
    construction, and flagged ``library_passthrough``: it writes no kernel). Replace its forward.

    For a kernel DSL (``cute``, ``tilelang``) the prompts' worked example of that backend comes
    first: its kernel, compiled at import, for the example problem (x * sigmoid(x) + y), so that the
    first judgement also shows the DSL compiles here; adapt it and call it from ``forward``."""
    import ast
    import re

    from .core.dsl_packages import DSL_BACKENDS
    from .generation.prompts import example_source

    reference = re.sub(r"\bModel\b", "ModelNew", problem.source)
    if backend not in DSL_BACKENDS:
        return reference
    example = example_source(backend)
    cls = next(n for n in ast.parse(example).body if isinstance(n, ast.ClassDef) and n.name == "ModelNew")
    kernels = "".join(example.splitlines(keepends=True)[:cls.lineno - 1]).rstrip()
    future = [line for line in reference.splitlines(keepends=True) if line.startswith("from __future__")]  # first in a file
    reference = "".join(line for line in reference.splitlines(keepends=True) if line not in future)
    return ("".join(future) + f"# kbench: backend={backend}\n# the prompts' worked {backend} kernel (x * sigmoid(x) + y): adapt "
            f"it to this problem and call it from forward\n{kernels}\n\n\n# the reference, renamed: correct, and no kernel of "
            f"its own yet\n{reference}")


def kbench(line: str, cell: str):
    """The ``%%kbench`` cell magic (module docstring): the verdict dict, or with ``--background``
    a :class:`LabJudgement` at once; a cell the lab cannot judge, or an interrupted one, is one line."""
    from IPython.core.error import UsageError
    from IPython.display import display

    # a cell that ends without a verdict raises after its one line (IPython prints a UsageError
    # without a traceback): ``_`` is not left on an earlier verdict, and papermill and nbval stop
    try:
        h = start_cell(line, cell)
    except LabError as e:
        raise UsageError(f"%%kbench: {e}") from None
    if h.args.background:
        return h
    try:
        h.wait()
    except KeyboardInterrupt:
        h.cancel()
        raise UsageError(f"%%kbench: interrupted: the judgement was cancelled after {h.elapsed_s:.1f} s, its worker ended, "
                         "nothing recorded") from None
    if h.verdict is None:
        summary = h.summary()
        raise UsageError(summary if summary.startswith("%%kbench") else f"%%kbench: {summary}")
    display({"text/html": render(h.verdict), "text/plain": render_text(h.verdict)}, raw=True)  # a terminal shows the text
    return h.verdict


def render_text(d: dict) -> str:
    """The verdict as plain text (a terminal's IPython shows this): status, cause, message, flags
    with their classes, times where a GPU timed a kernel, and the configurations."""
    from .scoring.flags import flag_class
    from .scoring.protocols import config_state

    status = "CORRECT" if d.get("correct") else f"FAILED ({d.get('failure')})"
    lines = [f"{status}  {d.get('problem')}  [{d.get('backend')} on {d.get('device_name')}, {d.get('precision')}, "
             f"protocol {d.get('protocol')}]  attempt {d.get('attempt')} of run {d.get('run_id')}"]
    if d.get("cause") and d.get("cause") != d.get("failure"):
        lines.append(f"  cause: {d['cause']}")
    if d.get("message"):
        lines += ["  " + line for line in str(d["message"])[:2000].splitlines()]
    lines += [f"  FLAG [{flag_class(f)}] {f}" for f in d.get("flags") or []]
    if d.get("runtime_ms") is not None:
        timed = "GPU kernel timing" if d.get("timing") == "gpu" else f"timed by {d.get('timing')}: no kernel speedup"
        lines.append(f"  runtime {d['runtime_ms']:.4g} ms, eager {d.get('baseline_ms') or float('nan'):.4g} ms ({timed})")
    for c in d.get("configs") or []:
        state = f"follows {c['follows']}" if c.get("follows") else config_state(c)
        lines.append(f"  {c.get('config')}: {state}" + (f" ({c['reason']})" if not c.get("checked") and c.get("reason") else ""))
    return "\n".join(lines)


def load_ipython_extension(ipython) -> None:
    ipython.register_magic_function(kbench, magic_kind="cell", magic_name="kbench")


__all__ = ["LabError", "LabJudgement", "LabVerdict", "STAGES", "judge_cell", "kbench", "load_ipython_extension", "options_line", "parser", "problem_of", "render", "render_text", "start_cell", "starter",
           "stored_baselines"]
