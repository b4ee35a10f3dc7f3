"""How the analyses' figures look: one colour-blind-safe palette (Okabe and Ito's), paper widths,
fonts embedded (TrueType, ``pdf.fonttype`` 42, from :data:`kbench_lib.reports.plots.STYLE`), and files that
are the same bytes on every rerun (:func:`kbench_lib.reports.plots.save`)."""
from __future__ import annotations

import contextlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402

from ..reports import plots  # noqa: E402

# Okabe & Ito (2008), "Color Universal Design": distinguishable under the common colour-vision deficiencies
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
OUTCOME = {"trusted": "#009E73", "flagged": "#E69F00", "failed": "#D55E00"}
COLUMN = plots.COLUMN  # inches, one column of a two-column paper
FULL = 7.0  # inches, the full text width
STYLE = {**plots.STYLE, "pdf.fonttype": 42, "ps.fonttype": 42, "axes.prop_cycle": matplotlib.cycler(color=OKABE_ITO)}


def color(i: int) -> str:
    return OKABE_ITO[i % len(OKABE_ITO)]


def colors_for(names) -> dict:
    """A fixed colour per name (sorted), so a model keeps its colour in every figure of a run."""
    return {n: color(i) for i, n in enumerate(sorted(set(map(str, names))))}


@contextlib.contextmanager
def figure(width: float = COLUMN, height: float = 2.4, ncols: int = 1, nrows: int = 1, **kw):
    """A figure at paper width in the house style: ``with figure(...) as (fig, axes): ...``."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", squeeze=False, **kw)
        yield fig, axes


def title(fig, text: str, df=None) -> None:
    plots._title(fig, text, df)


def save(fig, stem: str | Path) -> list[Path]:
    """PDF and PNG with fixed metadata; closes the figure."""
    try:
        return plots.save(fig, stem)
    finally:
        plt.close(fig)
