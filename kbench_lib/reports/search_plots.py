"""Figures of search strategies: test-time scaling and verifier accuracy (paper size, deterministic;
style and saving from :mod:`kbench_lib.reports.plots`)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import plots
from ..scoring.metrics import TIMING_KINDS, timing_kind
from .search_metrics import scaling, scaling_summary, seed_gain

AXES = (("proposals", "proposals"), ("judged", "candidates judged"), ("gpu_s", "judge seconds"))


def _clock(df: pd.DataFrame) -> str:
    kinds = sorted(set(timing_kind(df[df["speedup_eager"].notna()]))) if len(df) else []
    return ", ".join(TIMING_KINDS[k] for k in kinds) or "no timings"


def scaling_plot(df: pd.DataFrame, p: float = 1.0, by=("model", "strategy"), title: str = "Test-time scaling"):
    """Best speedup over eager found so far (geometric mean over problems, top) and the share of
    problems whose best is trusted and faster than ``p`` (bottom), against proposals made,
    candidates judged and judge seconds (mean over problems for the first two, summed for the
    last), one line per (model, strategy). The clock the speedups come from is named: a CPU
    clock or Triton's interpreter is not a kernel speedup."""
    summary = scaling_summary(scaling(df, by=by), p=p, by=by)
    with plt.rc_context(plots.STYLE):
        fig, axes = plt.subplots(2, 3, figsize=(2 * plots.COLUMN, 2.9), layout="constrained", sharey="row")
        for i, (key, g) in enumerate(summary.groupby(list(by), dropna=False)):
            label = " · ".join(str(k) for k in (key if isinstance(key, tuple) else (key,)))
            color = plots.SERIES_COLORS[i % len(plots.SERIES_COLORS)]
            for col, (x, name) in enumerate(AXES):
                axes[0, col].step(g[x], g["geomean_best_speedup"], where="post", color=color, lw=1.2, label=label)
                axes[1, col].step(g[x], g[f"fast_{p:g}"], where="post", color=color, lw=1.2)
                axes[1, col].set_xlabel(name)
        axes[0, 0].set_ylabel("best speedup\n(geomean)")
        axes[1, 0].set_ylabel(f"fast_{p:g} of best")
        axes[1, 0].set_ylim(-0.05, 1.05)
        axes[0, 0].legend(frameon=False, loc="best")
        sub = plots.provenance(df)
        fig.suptitle(f"{title} · speedups timed by {_clock(df)}" + (f"\n{sub}" if sub else ""), x=0.0, ha="left",
                     fontsize=plots.STYLE["axes.titlesize"], linespacing=1.3)
    return fig


def seed_gain_plot(df: pd.DataFrame, confirmed: dict | None = None, title: str = "Autotuning the shipped solutions"):
    """One step line per problem: the seed's runtime over the best trusted runtime found so far
    (:func:`kbench_lib.reports.search_metrics.seed_gain`) against proposals made (left) and judge seconds
    (right). ``confirmed`` ({problem: gain}) marks the problems whose gain held when the seed and
    the best were judged again, interleaved (a filled circle at the end of the line, the confirmed
    gain in the legend); the others end in an open circle. A dashed line marks 1.0, the seed."""
    curve = seed_gain(df, by=("model",))
    confirmed = confirmed or {}
    with plt.rc_context(plots.STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(2 * plots.COLUMN, 2.4), layout="constrained", sharey=True)
        for i, (problem, g) in enumerate(curve.groupby("problem", sort=True)):
            color = plots.SERIES_COLORS[i % len(plots.SERIES_COLORS)]
            style = ("-", "--", ":")[(i // len(plots.SERIES_COLORS)) % 3]
            name = problem.split("/")[-1]
            gain = confirmed.get(problem)
            label = f"{name} ({gain:.3f}x confirmed)" if gain else name
            last = g.dropna(subset=["gain"]).tail(1)
            for ax, x in zip(axes, ("proposals", "gpu_s")):
                ax.step(g[x], g["gain"], where="post", color=color, ls=style, lw=1.1, label=label if ax is axes[0] else None)
                if len(last):
                    ax.plot(last[x], last["gain"], "o", ms=3.5, color=color, mfc=color if gain else "white")
        for ax in axes:
            ax.axhline(1.0, color="0.5", lw=0.7, ls="--")
        axes[0].set_xlabel("proposals")
        axes[1].set_xlabel("judge seconds")
        axes[0].set_ylabel("seed time / best time")
        fig.legend(loc="outside right center", frameon=False, fontsize=6)
        sub = plots.provenance(df)
        fig.suptitle(f"{title} · timed by {_clock(df)}" + (f"\n{sub}" if sub else ""), x=0.0, ha="left",
                     fontsize=plots.STYLE["axes.titlesize"], linespacing=1.3)
    return fig


def verifier_plot(confusion: pd.DataFrame, title: str = "Soft verifiers against the judge"):
    """Precision and recall of each verifier (bars; NaN bars are missing: no positive case)."""
    d = confusion.reset_index(drop=True)
    with plt.rc_context(plots.STYLE):
        fig, ax = plt.subplots(figsize=(plots.COLUMN, 1.8), layout="constrained")
        x = np.arange(len(d))
        ax.bar(x - 0.18, d["precision"].fillna(0), 0.36, color=plots.SERIES_COLORS[0], label="precision")
        ax.bar(x + 0.18, d["recall"].fillna(0), 0.36, color=plots.SERIES_COLORS[2], label="recall")
        for xi, (pr, rc, n) in enumerate(zip(d["precision"], d["recall"], d["with_ground_truth"])):
            ax.text(xi, 1.02, f"n={n}" + (" (no failures)" if np.isnan(rc) else ""), ha="center", fontsize=6)
        ax.set_xticks(x, d["verifier"])
        ax.set_ylim(0, 1.15)
        ax.legend(frameon=False, loc="lower right")
        fig.suptitle(title, x=0.0, ha="left", fontsize=plots.STYLE["axes.titlesize"])
    return fig
