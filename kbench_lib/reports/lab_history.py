"""The kernel lab's history (:mod:`kbench_lib.lab`): a lab run's attempts in order, a diff between
any two, the best correct one, and an attempt saved where the ``folder:`` model reads it.

    from kbench_lib.reports import lab_history
    lab_history.attempts("lab-2026-11-28")          # one row per attempt
    lab_history.History("lab-2026-11-28").widget    # the same as an ipywidgets view, with diffs
"""
from __future__ import annotations

import difflib
import html
from pathlib import Path

import pandas as pd

from ..scoring import metrics

COLUMNS = ["attempt", "problem", "backend", "correct", "failure", "cause", "flags", "speedup_eager", "speedup_compile",
           "max_abs_err", "runtime_ms", "timestamp"]


def attempts(run_id: str, runs_root=None) -> pd.DataFrame:
    """The lab run's attempts in order (``attempt`` is the record's ``sample``), with their source."""
    from ..scoring.records import read_records
    from ..batch.runner import RUNS_ROOT

    df = read_records(Path(runs_root) if runs_root else RUNS_ROOT, run_id)
    if not len(df):
        return pd.DataFrame(columns=[*COLUMNS, "candidate_source", "problem_path", "trusted"])
    df = df.sort_values(["sample", "timestamp"]).assign(attempt=lambda d: d["sample"].astype(int))
    df["speedup_eager"] = metrics.kernel_speedup(df, "eager")
    df["speedup_compile"] = metrics.kernel_speedup(df, "compile")
    df["trusted"] = metrics.trusted(df)
    return df[[*COLUMNS, "trusted", "candidate_source", "problem_path"]].reset_index(drop=True)


def best(df: pd.DataFrame) -> pd.Series | None:
    """The best trusted attempt: the fastest kernel speedup, else the latest trusted one; None if none."""
    ok = df[df["trusted"]]
    if not len(ok):
        return None
    return ok.sort_values(["speedup_eager", "attempt"], ascending=[False, False], na_position="last").iloc[0]


def diff(df: pd.DataFrame, a: int, b: int, as_html: bool = False) -> str:
    """The unified diff from attempt ``a``'s source to attempt ``b``'s (an HTML table with ``as_html``)."""
    src = {int(r.attempt): r.candidate_source or "" for r in df.itertuples()}
    for n in (a, b):
        if n not in src:
            raise KeyError(f"no attempt {n} in this lab run (attempts: {sorted(src)})")
    old, new = src[a].splitlines(), src[b].splitlines()
    if as_html:
        return difflib.HtmlDiff(wrapcolumn=100).make_table(old, new, f"attempt {a}", f"attempt {b}", context=True, numlines=3)
    return "\n".join(difflib.unified_diff(old, new, f"attempt {a}", f"attempt {b}", lineterm=""))


def save(df: pd.DataFrame, n: int, folder) -> Path:
    """Writes attempt ``n``'s source as ``<folder>/<problem stem>__lab<n>.py``, where ``folder:<folder>``
    (``kbench run --model folder:...``) reads it as a sample of that problem."""
    rows = df[df["attempt"] == n]
    if not len(rows):
        raise KeyError(f"no attempt {n} in this lab run")
    r = rows.iloc[-1]
    stem = Path(r["problem_path"]).stem if isinstance(r["problem_path"], str) else str(r["problem"]).split("/")[-1]
    path = Path(folder) / f"{stem}__lab{n}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(r["candidate_source"])
    return path


class History:
    """An ipywidgets view of a lab run: the attempts table, two attempts to diff, the best one, and
    a button that saves the chosen attempt into ``save_to`` for the ``folder:`` model."""

    def __init__(self, run_id: str, runs_root=None, save_to="results/runs/lab-solutions"):
        import ipywidgets as w

        self.run_id, self.runs_root, self.save_to = run_id, runs_root, save_to
        self.df = attempts(run_id, runs_root)
        numbers = [int(n) for n in self.df["attempt"]]
        self.a = w.Dropdown(options=numbers, value=numbers[0] if numbers else None, description="from")
        self.b = w.Dropdown(options=numbers, value=numbers[-1] if numbers else None, description="to")
        self.save_button = w.Button(description="save 'to' for folder:", disabled=not numbers)
        self.table, self.diff_view, self.status = w.HTML(), w.HTML(), w.HTML()
        for d in (self.a, self.b):
            d.observe(lambda _: self._show_diff(), names="value")
        self.save_button.on_click(lambda _: self._save())
        self.widget = w.VBox([self.table, w.HBox([self.a, self.b, self.save_button]), self.status, self.diff_view])
        self._show_table()
        self._show_diff()

    def _show_table(self) -> None:
        if not len(self.df):
            self.table.value = f"<i>no attempt in lab run {html.escape(self.run_id)} yet</i>"
            return
        top = best(self.df)
        shown = self.df[COLUMNS].copy()
        shown["flags"] = shown["flags"].map(lambda f: "; ".join(metrics.flag_name([x]) for x in f) if f is not None and len(f) else "")
        note = (f"best trusted attempt: {int(top['attempt'])}" + (f" ({top['speedup_eager']:.3g}x over eager)" if pd.notna(top["speedup_eager"]) else "")
                if top is not None else "no trusted attempt yet")
        self.table.value = shown.to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="") + f"<p>{html.escape(note)}</p>"

    def _show_diff(self) -> None:
        if self.a.value is None or self.b.value is None:
            self.diff_view.value = ""
            return
        self.diff_view.value = diff(self.df, self.a.value, self.b.value, as_html=True)

    def _save(self) -> None:
        path = save(self.df, self.b.value, self.save_to)
        self.status.value = f"saved attempt {self.b.value} as {html.escape(str(path))}"


__all__ = ["History", "attempts", "best", "diff", "save"]
