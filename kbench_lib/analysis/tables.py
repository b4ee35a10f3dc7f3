"""Tables beside the figures: CSV (every number, full precision) and LaTeX (booktabs, values with
their confidence intervals), written with pandas."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd


def _fmt(v, digits: int) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "--"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def with_intervals(table: pd.DataFrame, stats, digits: int = 2) -> pd.DataFrame:
    """A copy with each statistic in ``stats`` as text ``value [lo, hi]`` (from ``<stat>_lo`` and
    ``<stat>_hi``), the interval columns dropped; other columns as they are."""
    out = table.copy()
    for s in stats:
        if s not in out:
            continue
        lo, hi = out.get(f"{s}_lo"), out.get(f"{s}_hi")
        text = []
        for i in range(len(out)):
            v = out[s].iloc[i]
            if lo is not None and hi is not None and isinstance(v, float) and not math.isnan(v) and not math.isnan(lo.iloc[i]):
                text.append(f"{_fmt(v, digits)} [{_fmt(lo.iloc[i], digits)}, {_fmt(hi.iloc[i], digits)}]")
            else:
                text.append(_fmt(v, digits))
        out[s] = text
        out = out.drop(columns=[c for c in (f"{s}_lo", f"{s}_hi") if c in out])
    return out


def _latex_escape(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("_", r"\_"), ("%", r"\%"), ("&", r"\&"), ("#", r"\#"), ("$", r"\$")):
        text = text.replace(a, b)
    return text


def export(table: pd.DataFrame, stem: str | Path, caption: str = "", stats=(), digits: int = 2) -> list[Path]:
    """Writes ``<stem>.csv`` (the table as it is) and ``<stem>.tex`` (``stats`` with their intervals,
    other floats at ``digits`` places); returns the paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    csv = stem.with_suffix(".csv")
    table.to_csv(csv, index=False, float_format="%.6g")
    shown = with_intervals(table, stats, digits)
    shown = shown.apply(lambda col: col.map(lambda v: _fmt(v, digits)) if col.dtype.kind == "f" else col.map(str))
    shown = shown.apply(lambda col: col.map(_latex_escape))
    shown.columns = [_latex_escape(str(c)) for c in shown.columns]
    tex = stem.with_suffix(".tex")
    latex = shown.to_latex(index=False, escape=False, caption=_latex_escape(caption) or None, label=f"tab:{stem.name}",
                           column_format="l" * len(shown.columns))
    latex = latex.replace("\\toprule", "\\toprule").replace("\\begin{table}", "\\begin{table}[t]\n\\small")
    tex.write_text(latex)
    return [csv, tex]
