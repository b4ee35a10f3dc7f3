"""The interactive explorer (notebook 07): choose run, model, level, problem, sample and turn, filter
by outcome (failure category), tag or flag, and see one judged candidate: its verdict, flags and
failure message, timings, profile and fusion summary, and the reference beside the candidate with
their diff. Built from ipywidgets, so it runs in JupyterLab (and anywhere widgets render).

The selection logic (:class:`Selection`) is plain pandas and tested without a browser; the widget
(:class:`Explorer`) wires dropdowns to it and renders :mod:`.explorer_views`.
"""
from __future__ import annotations

import pandas as pd

from . import explorer_views as views
from .failures import outcome
from .fusion import COMPILE_MODEL
from .sources import candidate_source, reference_source

ANY = "(any)"
CHOICES = ("run_id", "model", "level", "problem", "sample", "turn")
LABELS = {"run_id": "run", "model": "model", "level": "level", "problem": "problem", "sample": "sample", "turn": "turn"}


def flag_names(flags) -> list[str]:
    return sorted({str(f).split(":", 1)[0].strip() for f in (flags if flags is not None else [])})


class Selection:
    """Filters (outcome, tag, flag) and the cascade of choices over a records frame."""

    def __init__(self, df: pd.DataFrame):
        d = df.reset_index(drop=True).copy()
        d["outcome"] = outcome(d).to_numpy() if len(d) else []
        d["turn"] = d["turn"].fillna(0).astype(int) if "turn" in d else 0
        d["sample"] = d["sample"].fillna(0).astype(int)
        d["_tags"] = d["tags"].map(lambda t: sorted(map(str, t)) if t is not None and len(t) else []) if "tags" in d else [[]] * len(d)
        d["_flags"] = d["flags"].map(flag_names) if "flags" in d else [[]] * len(d)
        self.df = d

    def filter_options(self) -> dict:
        d = self.df
        return {"outcome": [ANY] + sorted(d["outcome"].dropna().unique()),
                "tag": [ANY] + sorted({t for ts in d["_tags"] for t in ts}),
                "flag": [ANY] + sorted({f for fs in d["_flags"] for f in fs})}

    def filtered(self, outcome_: str = ANY, tag: str = ANY, flag: str = ANY) -> pd.DataFrame:
        d = self.df
        if outcome_ != ANY:
            d = d[d["outcome"] == outcome_]
        if tag != ANY:
            d = d[d["_tags"].map(lambda ts: tag in ts)]
        if flag != ANY:
            d = d[d["_flags"].map(lambda fs: flag in fs)]
        return d

    @staticmethod
    def cascade(d: pd.DataFrame, chosen: dict) -> tuple[dict, dict, pd.DataFrame]:
        """Options of each choice given those above it, the choices kept (or moved to the first
        option where no longer valid), and the rows that match them all."""
        options, kept = {}, {}
        for name in CHOICES:
            values = sorted(d[name].dropna().unique().tolist(), key=lambda v: (str(type(v)), v)) if len(d) else []
            options[name] = values
            value = chosen.get(name)
            value = value if value in values else (values[0] if values else None)
            kept[name] = value
            if value is not None:
                d = d[d[name] == value]
        return options, kept, d

    def compile_row(self, row: dict) -> dict | None:
        """torch.compile's record for the same problem on the same device and size, if any."""
        d = self.df
        m = d[(d["model"] == COMPILE_MODEL) & (d["problem"] == row.get("problem"))]
        for key in ("device_name", "small", "precision"):
            if key in d and row.get(key) is not None:
                m = m[m[key] == row.get(key)]
        return m.iloc[-1].to_dict() if len(m) else None


def render(row: dict | None, compile_row: dict | None = None) -> dict:
    """The HTML of every pane for one record row."""
    if row is None:
        empty = "<p class='kb-empty'>No record matches these filters.</p>"
        return {"verdict": empty, "timings": "", "fusion": "", "profile": "", "sources": "", "diff": ""}
    ref, cand = reference_source(row), candidate_source(row)
    return {"verdict": views.verdict_html(row), "timings": views.timings_html(row), "fusion": views.fusion_html(row, compile_row),
            "profile": views.profile_html(row), "sources": views.side_by_side_html(ref, cand), "diff": views.diff_html(ref, cand)}


class Explorer:
    """The widget: ``Explorer(records).widget`` is what a notebook displays."""

    def __init__(self, df: pd.DataFrame):
        import ipywidgets as w

        self.sel = Selection(df)
        opts = self.sel.filter_options()
        layout = w.Layout(width="auto", min_width="140px")
        self.filters = {k: w.Dropdown(options=v, value=ANY, description=k, layout=layout) for k, v in opts.items()}
        self.choices = {k: w.Dropdown(options=[], description=LABELS[k], layout=layout) for k in CHOICES}
        self.count = w.HTML()
        self.panes = {k: w.HTML() for k in ("verdict", "timings", "fusion", "profile", "sources", "diff")}
        tabs = w.Tab(children=[self.panes["sources"], self.panes["diff"], self.panes["profile"]])
        for i, title in enumerate(("Side by side", "Diff", "Profile")):
            tabs.set_title(i, title)
        self._busy = False
        for dd in (*self.filters.values(), *self.choices.values()):
            dd.observe(self._changed, names="value")
        self.widget = w.VBox([
            w.HBox(list(self.choices.values())[:3]), w.HBox(list(self.choices.values())[3:]),
            w.HBox([*self.filters.values(), self.count]),
            self.panes["verdict"], w.HBox([self.panes["timings"], self.panes["fusion"]]), tabs,
        ])
        self.widget.add_class("kb-explorer")
        self.refresh()

    def _changed(self, _change) -> None:
        if not self._busy:
            self.refresh()

    def refresh(self) -> None:
        """Recompute the choices' options from the filters and the choices above each, then render."""
        self._busy = True
        try:
            d = self.sel.filtered(*(self.filters[k].value for k in ("outcome", "tag", "flag")))
            options, kept, rows = Selection.cascade(d, {k: dd.value for k, dd in self.choices.items()})
            for k, dd in self.choices.items():
                labels = [(str(v), v) for v in options[k]]
                if list(dd.options) != labels:
                    dd.options = labels
                dd.value = kept[k]
            self.count.value = f"<span class='kb-count'>{len(d)} of {len(self.sel.df)} candidates match</span>"
            row = rows.iloc[0].to_dict() if len(rows) else None
            html = render(row, self.sel.compile_row(row) if row else None)
            for k, pane in self.panes.items():
                pane.value = html[k]
        finally:
            self._busy = False

    def select(self, **choices) -> None:
        """Set filters, then choices from the top down, by name (``select(outcome="runtime_error",
        problem=...)``), as a person would with the dropdowns: each change updates the options below."""
        for k in (*self.filters, *CHOICES):
            if k in choices:
                (self.filters.get(k) or self.choices[k]).value = choices[k]
