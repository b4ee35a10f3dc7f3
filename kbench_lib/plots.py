"""Paper-ready, deterministic figures from record rows (PDF and PNG, no timestamps in the files)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import metrics

STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "pdf.fonttype": 42,
    "svg.hashsalt": "kbench",
}
OUTCOME_COLORS = {"trusted": "#2a9d8f", "flagged": "#e9c46a", "failed": "#e76f51"}


def _outcome(df: pd.DataFrame) -> pd.Series:
    t = metrics.trusted(df)
    return pd.Series(np.where(t, "trusted", np.where(df["correct"].fillna(False).astype(bool), "flagged", "failed")), index=df.index)


def save(fig, path_stem: str | Path) -> list[Path]:
    """Writes ``<stem>.pdf`` and ``<stem>.png`` with fixed metadata, so reruns give identical files."""
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for ext, meta in (("pdf", {"CreationDate": None, "ModDate": None, "Producer": "kbench"}), ("png", {"Software": "kbench"})):
        p = stem.with_suffix(f".{ext}")
        fig.savefig(p, metadata=meta, bbox_inches="tight")
        out.append(p)
    return out


def speedup_plot(df: pd.DataFrame, against: str = "eager", title: str | None = None):
    """One point per judged candidate: speedup over the baseline (log scale), coloured by outcome;
    failed candidates sit on the axis floor."""
    col = metrics.AGAINST[against]
    d = df.assign(outcome=_outcome(df)).sort_values(["level", "problem", "model"]).reset_index(drop=True)
    speed = d[col].astype(float)
    floor = 10 ** np.floor(np.log10(np.nanmin(speed[speed > 0]))) / 2 if (speed > 0).any() else 0.1
    y = speed.where(d["outcome"] != "failed").fillna(floor).clip(lower=floor)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(max(4.0, 0.22 * len(d) + 1.5), 3.0))
        for outcome, color in OUTCOME_COLORS.items():
            m = d["outcome"] == outcome
            ax.scatter(np.flatnonzero(m), y[m], s=18, color=color, label=outcome, zorder=3)
        ax.axhline(1.0, color="0.4", lw=0.8, ls="--", zorder=1)
        ax.set_yscale("log")
        ax.set_ylabel(f"speedup over {against}")
        ax.set_xticks(range(len(d)))
        ax.set_xticklabels([p.split("/")[-1][:28] for p in d["problem"]], rotation=70, ha="right", fontsize=6)
        ax.legend(frameon=False, fontsize=7, loc="best")
        ax.set_title(title or f"Speedup over {against} PyTorch")
        fig.tight_layout()
    return fig


def fast_p_curve(df: pd.DataFrame, against: str = "eager", by: str = "model", ps=None):
    """fast_p as a function of the threshold p, one line per group."""
    ps = np.linspace(0, 3, 61) if ps is None else np.asarray(ps)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(4.0, 3.0))
        for name, g in sorted(df.groupby(by), key=lambda kv: str(kv[0])):
            ax.plot(ps, [metrics.fast_p(g, p, against) for p in ps], label=str(name), lw=1.5)
        ax.set_xlabel("speedup threshold p")
        ax.set_ylabel(r"fast$_p$")
        ax.set_ylim(0, 1.02)
        ax.axvline(1.0, color="0.6", lw=0.6, ls=":")
        ax.legend(frameon=False, fontsize=7)
        ax.set_title(f"fast_p against {against}")
        fig.tight_layout()
    return fig


def outcome_bars(df: pd.DataFrame, by: str = "model"):
    """Stacked bars: share of each failure category, flagged and trusted results per group."""
    counts = metrics.failure_counts(df, by=(by,))
    shares = counts.div(counts.sum(axis=1), axis=0)
    order = [c for c in ["trusted", "flagged"] if c in shares] + sorted(c for c in shares if c not in ("trusted", "flagged"))
    shares = shares[order]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(4.5, 0.5 * len(shares) + 1.2))
        left = np.zeros(len(shares))
        cmap = plt.get_cmap("tab20")
        for i, col in enumerate(order):
            color = OUTCOME_COLORS.get(col, cmap(i % 20))
            ax.barh(shares.index.astype(str), shares[col], left=left, color=color, label=col)
            left += shares[col].to_numpy()
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of candidates")
        ax.legend(frameon=False, fontsize=6, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.35))
        fig.tight_layout()
    return fig
