"""Paper-ready, deterministic figures from record rows (PDF and PNG, no timestamps in the files).

Sizes are for a two-column paper: ``COLUMN`` inches wide (one column), fonts 7 to 9 pt at that
size. Every figure that shows times says on which device and on which dates they were measured
(:func:`provenance`). Speedup figures draw kernel timings only (:func:`kbench_lib.scoring.metrics.kernel_timed`):
given rows timed on a CPU or through Triton's interpreter alone, they raise :class:`NoKernelTimings`.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..scoring import metrics

COLUMN = 3.4  # inches: one column of a two-column paper
STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 300,
    "font.size": 8,
    "axes.titlesize": 8.5,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.linewidth": 0.6,
    "pdf.fonttype": 42,
    "svg.hashsalt": "kbench",
}
OUTCOME_COLORS = {"trusted": "#2a9d8f", "flagged": "#e9c46a", "failed": "#e76f51"}
SERIES_COLORS = ("#264653", "#2a9d8f", "#e76f51", "#8d6cab", "#e9c46a", "#6c757d")
MAX_NAMED = 60  # problems drawn one per line with their names; more are drawn per level


CSS_DPI = 96  # a notebook shows an image of N pixels at N CSS pixels, 96 to the inch


def displayed_label_pt(scale: float) -> float:
    """The size in points of the style's smallest label in a saved PNG shown at ``scale`` of its
    pixel width in a notebook (:func:`kbench_lib.workflows.show`)."""
    smallest = min(v for k, v in STYLE.items() if k.endswith("size") and isinstance(v, (int, float)))
    return smallest * STYLE["savefig.dpi"] / CSS_DPI * scale


class NoKernelTimings(ValueError):
    """The rows hold no kernel timing (a machine without a GPU): there is no speedup to draw."""


def provenance(df: pd.DataFrame) -> str:
    """"<device name(s)> · <date or date range>" of the rows (``timestamp`` of records, ``date`` of baselines)."""
    parts = []
    if "device_name" in df:
        names = sorted(set(df["device_name"].dropna().astype(str)))
        if names:
            parts.append(", ".join(names))
    when = df["timestamp"] if "timestamp" in df else df["date"] if "date" in df else None
    if when is not None:
        t = pd.to_datetime(when, utc=True, errors="coerce").dropna()
        if len(t):
            first, last = t.min().strftime("%Y-%m-%d"), t.max().strftime("%Y-%m-%d")
            parts.append(first if first == last else f"{first} to {last}")
    return " · ".join(parts)


def _title(fig, title: str, df: pd.DataFrame | None = None) -> None:
    """The figure's title at its left edge, with the device and dates of the rows on a second line."""
    sub = provenance(df) if df is not None else ""
    fig.suptitle(f"{title}\n{sub}" if sub else title, x=0.0, ha="left", fontsize=STYLE["axes.titlesize"], linespacing=1.3)


def _outcome(df: pd.DataFrame) -> pd.Series:
    t = metrics.trusted(df)
    return pd.Series(np.where(t, "trusted", np.where(df["correct"].fillna(False).astype(bool), "flagged", "failed")), index=df.index)


def _kernel_rows(df: pd.DataFrame, what: str) -> pd.DataFrame:
    d = df[metrics.kernel_timed(df)]
    if not len(d):
        kinds = ", ".join(sorted(set(metrics.timing_kind(df)))) or "no rows"
        raise NoKernelTimings(f"no GPU kernel timing among the rows ({kinds}): no {what} to draw")
    return d


def save(fig, path_stem: str | Path) -> list[Path]:
    """Writes ``<stem>.pdf`` and ``<stem>.png`` with fixed metadata, so reruns give identical files."""
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    # fonts embedded as TrueType (42), not Type 3: the setting is read when the file is written
    with plt.rc_context({"pdf.fonttype": 42, "ps.fonttype": 42, "svg.hashsalt": STYLE["svg.hashsalt"]}):
        for ext, meta in (("pdf", {"CreationDate": None, "ModDate": None, "Producer": "kbench"}), ("png", {"Software": "kbench"})):
            p = stem.with_suffix(f".{ext}")
            # at the style's resolution whatever style is active when this is called: a figure drawn in
            # STYLE and saved outside it came out at matplotlib's 100 dpi
            fig.savefig(p, metadata=meta, bbox_inches="tight", pad_inches=0.02, dpi=STYLE["savefig.dpi"])
            out.append(p)
    return out


def _short(problem: str) -> str:
    return problem.split("/")[-1]


def speedup_plot(df: pd.DataFrame, against: str = "eager", title: str | None = None):
    """Kernel speedup over the baseline (log scale), one line per judged candidate grouped by level,
    coloured by outcome; failed candidates are crosses at the axis floor. Rows without a kernel
    timing are left out (:class:`NoKernelTimings` if none is left). Over ``MAX_NAMED`` candidates,
    one strip per level instead."""
    d = _kernel_rows(df, "speedup")
    d = d.assign(outcome=_outcome(d), speed=metrics.kernel_speedup(d, against))
    title = title or f"Kernel speedup over {'torch.compile' if against == 'compile' else 'eager PyTorch'}"
    if len(d) > MAX_NAMED:
        return _speedup_strips(d, against, title)
    d = d.assign(_s=d["speed"].fillna(0.0)).sort_values(["level", "_s", "problem"], ascending=[True, False, True]).reset_index(drop=True)
    several = d["model"].nunique() > 1 if "model" in d else False
    labels = [_short(p) + (f" ({m})" if several else "") for p, m in zip(d["problem"], d.get("model", d["problem"]))]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(COLUMN, 0.125 * len(d) + 1.0), layout="constrained")
        _speedup_dots(ax, d, labels)
        ax.set_xlabel(f"speedup over {'torch.compile' if against == 'compile' else 'eager'} (log scale)")
        one = d["outcome"].nunique() == 1 and d["speed"].gt(0).all()
        if not one:
            ax.legend(frameon=True, framealpha=0.9, edgecolor="none", loc="best", handletextpad=0.2, borderaxespad=0.3)
        _title(fig, title + (f" (all {d['outcome'].iloc[0]})" if one else ""), d)
    return fig


def _speedup_dots(ax, d: pd.DataFrame, labels: list[str]) -> None:
    """One row per candidate, top to bottom: a dot at its speedup on a line from 1x, a cross at the
    floor when it has no time (failed), levels shaded and named at the right."""
    speed = d["speed"]
    ok = (speed > 0).to_numpy()
    lo = min(float(speed[ok].min()) if ok.any() else 1.0, 1.0)
    hi = max(float(speed[ok].max()) if ok.any() else 1.0, 1.0)
    floor = lo / 1.6
    y = np.arange(len(d))[::-1]
    ax.hlines(y[ok], 1.0, speed[ok], color="0.8", lw=0.6, zorder=2)
    for outcome, color in OUTCOME_COLORS.items():
        m = (d["outcome"] == outcome).to_numpy() & ok
        if m.any():
            ax.scatter(speed[m], y[m], s=14, color=color, label=outcome, zorder=3, linewidths=0)
    if (~ok).any():
        ax.scatter(np.full((~ok).sum(), floor), y[~ok], marker="x", s=14, color=OUTCOME_COLORS["failed"],
                   label="failed (no time)", zorder=3, linewidths=0.9)
    ax.axvline(1.0, color="0.4", lw=0.7, ls="--", zorder=1)
    ax.set_xlim(floor / 1.3, hi * 1.4)
    _ratio_axis(ax, "x")
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=6)
    ax.set_ylim(-0.7, len(d) - 0.3)
    ax.tick_params(axis="y", length=0, pad=2)
    ax.grid(axis="x", color="0.9", lw=0.5, zorder=0)
    _level_bands(ax, d["level"].tolist(), y)
    for text, ha in (("slower ", "right"), (" faster", "left")):
        ax.annotate(text, xy=(1.0, 1.0), xycoords=("data", "axes fraction"), ha=ha, va="bottom", fontsize=6, color="0.4")


def _level_bands(ax, levels: list[str], y: np.ndarray) -> None:
    """Alternate shading per level and the level's name beside its rows, outside the axes."""
    start, band = 0, 0
    for k in range(1, len(levels) + 1):
        if k == len(levels) or levels[k] != levels[start]:
            top, bottom = y[start], y[k - 1]
            if band % 2 == 0 and len(set(levels)) > 1:
                ax.axhspan(bottom - 0.5, top + 0.5, color="0.95", zorder=0, lw=0)
            ax.annotate(levels[start], xy=(1.0, (top + bottom) / 2), xycoords=("axes fraction", "data"), xytext=(3, 0),
                        textcoords="offset points", ha="left", va="center", rotation=-90, fontsize=6.5, color="0.35")
            start, band = k, band + 1


def _strips(ax, series: list[tuple[str, str, pd.DataFrame]], levels: list[str], log: bool, counts: bool = False) -> None:
    """Per level, one strip of points per series (name, colour, frame with ``level`` and ``value``),
    side by side, a black bar at each strip's median; the legend gives each series' count, and
    ``counts`` writes each strip's own count above the axes' floor."""
    rng = np.random.default_rng(0)  # fixed jitter: reruns draw the same figure
    width = 0.8 / len(series)
    for j, (name, color, s) in enumerate(series):
        v_all = s["value"].astype(float)
        n = int((np.isfinite(v_all) & (v_all > 0)).sum()) if log else int(np.isfinite(v_all).sum())
        first = True
        for i, level in enumerate(levels):
            v = s.loc[s["level"] == level, "value"].astype(float)
            v = v[np.isfinite(v) & (v > 0)] if log else v[np.isfinite(v)]
            if not len(v):
                continue
            x = i - 0.4 + width * (j + 0.5)
            ax.scatter(x + rng.uniform(-0.32, 0.32, len(v)) * width, v, s=4, color=color, alpha=0.6, linewidths=0,
                       label=f"{name} (n={n})" if first else None, zorder=2)
            med = float(np.median(v))
            ax.plot([x - 0.42 * width, x + 0.42 * width], [med, med], color="black", lw=1.2, zorder=3, solid_capstyle="butt")
            if counts:
                ax.annotate(f"{len(v)}", xy=(x, 0.0), xycoords=("data", "axes fraction"), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=5.5, color="0.35")
            first = False
    ax.set_xticks(range(len(levels)))
    ax.set_xlim(-0.55, len(levels) - 0.45)
    ax.set_xticklabels(levels)
    ax.tick_params(axis="x", length=0)
    if log:
        _ratio_axis(ax, "y")
    ax.grid(axis="y", color="0.9", lw=0.5, zorder=0)


def _ratio_axis(ax, which: str) -> None:
    """A log axis of ratios labelled 0.5x, 1x, 2x, 5x, ... rather than powers of ten."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    lo, hi = (ax.get_ylim() if which == "y" else ax.get_xlim())
    decades = np.log10(hi / lo) if lo > 0 and hi > lo else 1.0
    subs = (1.0, 2.0, 5.0) if decades <= 1.3 else (1.0, 3.0) if decades <= 2.5 else (1.0,)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    axis.set_minor_formatter(NullFormatter())


def _speedup_strips(d: pd.DataFrame, against: str, title: str):
    """Per level, one strip of trusted candidates per model, side by side, each with its count:
    models are never pooled (a tuner's hundreds of proposals would drown the hand-written solutions)."""
    s = d[d["outcome"] == "trusted"].rename(columns={"speed": "value"})
    levels = sorted(d["level"].dropna().unique())
    models = sorted(s["model"].dropna().astype(str).unique()) if "model" in s else []
    series = ([(m, SERIES_COLORS[k % len(SERIES_COLORS)], s[s["model"].astype(str) == m]) for k, m in enumerate(models)]
              or [("trusted", OUTCOME_COLORS["trusted"], s)])
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(COLUMN if len(series) < 3 else 1.6 * COLUMN, 2.8), layout="constrained")
        _strips(ax, series, levels, log=True, counts=True)
        ax.axhline(1.0, color="0.4", lw=0.7, ls="--", zorder=1)
        ax.set_ylabel(f"speedup over {against}")
        ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncols=min(len(series), 3), fontsize=6,
                  markerscale=2, handletextpad=0.2, columnspacing=1.0)
        _title(fig, title + " (trusted; bar: median; n per strip)", d)
    return fig


def fast_p_curve(df: pd.DataFrame, against: str = "eager", by: str = "model", ps=None, title: str | None = None):
    """fast_p as a function of the threshold p, one line per group (with its size). Needs kernel
    timings (:class:`NoKernelTimings` otherwise): fast_p for p > 0 is not defined without them."""
    _kernel_rows(df, "fast_p curve")
    ps = np.linspace(0, 3, 121) if ps is None else np.asarray(ps)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(COLUMN, 2.4), layout="constrained")
        groups = sorted(df.groupby(by), key=lambda kv: str(kv[0]))
        for k, (name, g) in enumerate(groups):
            ax.step(ps, [metrics.fast_p(g, p, against) for p in ps], where="post", lw=1.3,
                    color=SERIES_COLORS[k % len(SERIES_COLORS)], label=f"{name} (n={len(g)})")
        ax.set_xlabel(f"speedup threshold p (over {'torch.compile' if against == 'compile' else 'eager'})")
        ax.set_ylabel(r"fast$_p$")
        ax.set_ylim(0, 1.02)
        ax.set_xlim(ps[0], ps[-1])
        ax.axvline(1.0, color="0.6", lw=0.6, ls=":")
        ax.grid(color="0.92", lw=0.5)
        ax.legend(frameon=False, loc="upper right")
        _title(fig, title or rf"fast$_p$ against {'torch.compile' if against == 'compile' else 'eager PyTorch'}", df)
    return fig


def outcome_bars(df: pd.DataFrame, by: str = "model", labels: dict | None = None, title: str | None = None):
    """Stacked bars: share of trusted, flagged (by the flag's name) and failed (by category)
    candidates per group; ``labels`` renames groups (e.g. to say what a model is)."""
    counts = metrics.failure_counts(df, by=(by,), flag_names=True)
    shares = counts.div(counts.sum(axis=1), axis=0)
    flagged = sorted(c for c in shares if c.startswith("flagged"))
    order = [c for c in ["trusted"] if c in shares] + flagged + sorted(c for c in shares if c != "trusted" and c not in flagged)
    shares = shares[order]
    names = [(labels or {}).get(str(k), str(k)) + f" (n={int(counts.loc[k].sum())})" for k in shares.index]
    yellows = plt.get_cmap("YlOrBr")
    reds = plt.get_cmap("Reds")
    failed = [c for c in order if c != "trusted" and c not in flagged]
    rows = -(-len(order) // 2)  # legend rows, two columns
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(COLUMN, 0.26 * len(shares) + 0.95 + 0.16 * rows), layout="constrained")
        left = np.zeros(len(shares))
        for col in order:
            if col == "trusted":
                color = OUTCOME_COLORS["trusted"]
            elif col in flagged:
                color = yellows(0.3 + 0.4 * flagged.index(col) / max(1, len(flagged)))
            else:
                color = reds(0.35 + 0.5 * failed.index(col) / max(1, len(failed)))
            ax.barh(names, shares[col], left=left, color=color, label=col, height=0.62, edgecolor="white", linewidth=0.4)
            left += shares[col].to_numpy()
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of candidates")
        ax.tick_params(axis="y", length=0)
        fig.legend(loc="outside lower left", ncol=2, frameon=False, handlelength=1.0, columnspacing=1.0)
        _title(fig, title or "Outcome of every candidate", df)
    return fig


def baseline_speedup_plot(baselines: pd.DataFrame, modes=("compile", "cudagraph")):
    """Stored baselines: each mode's speedup over eager (eager time over the mode's time) per problem,
    by level (log; above 1x the mode is faster than eager), one strip per mode, bar at the median."""
    wide = baselines.pivot_table(index=["level", "problem"], columns="mode", values="runtime_ms", aggfunc="last").reset_index()
    levels = sorted(wide["level"].unique())
    names = {"compile": "torch.compile", "cudagraph": "CUDA graph"}
    series = [(names.get(m, m), SERIES_COLORS[k + 1], wide.assign(value=wide["eager"] / wide[m]))
              for k, m in enumerate(modes) if m in wide]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(COLUMN, 2.5), layout="constrained")
        _strips(ax, series, levels, log=True)
        ax.axhline(1.0, color="0.4", lw=0.7, ls="--", zorder=1)
        ax.set_ylabel("speedup over eager")
        ax.legend(frameon=False, loc="upper right", markerscale=2.5, handletextpad=0.1)
        _title(fig, "torch.compile and CUDA graphs against eager PyTorch", baselines)
    return fig


def sol_fraction_plot(series: list[tuple[str, pd.DataFrame]], title: str = "Fraction of the datasheet speed of light"):
    """Per level, the fraction of the speed of light (``sol_ms`` over the measured time) of each
    series: (name, frame with ``level``, ``value`` and the provenance columns)."""
    levels = sorted({lv for _, s in series for lv in s["level"].dropna().unique()})
    both = pd.concat([s for _, s in series], ignore_index=True)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(COLUMN, 2.6), layout="constrained")
        _strips(ax, [(n, SERIES_COLORS[k], s) for k, (n, s) in enumerate(series)], levels, log=False)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("sol_ms / measured time")
        fig.legend(loc="outside lower left", frameon=False, markerscale=2.5, ncol=2, handletextpad=0.1, columnspacing=0.8)
        _title(fig, title, both)
    return fig


def protocol_plot(df: pd.DataFrame, by: str = "model", title: str | None = None):
    """The same verdicts under each protocol (docs/PROTOCOLS.md), one group per ``by``: left, the
    share correct and unflagged (fast_0) and, with kernel timings, fast_1 under kbench, kernelbench
    and kernelbench-v0; right, what kernelbench-v0 accepts and kbench rejects, by cause, as a share
    of the group's candidates. Read from the records alone (:func:`kbench_lib.scoring.metrics.under_protocol`)."""
    from ..scoring.protocols import PROTOCOLS

    groups = sorted(df[by].dropna().astype(str).unique())
    timed = metrics.kernel_timed(df).any()
    ps = (0.0, 1.0) if timed else (0.0,)
    read = {p: metrics.under_protocol(df, p) for p in PROTOCOLS}
    gap = metrics.protocol_gap(df, "kernelbench-v0", "kbench", by=(by,))
    with plt.rc_context(STYLE):
        fig, (left, right) = plt.subplots(1, 2, figsize=(2 * COLUMN, 0.36 * len(groups) * len(ps) + 1.6), layout="constrained",
                                          gridspec_kw={"width_ratios": [1.2, 1]})
        rows = [(g, p) for g in groups for p in ps]
        y = np.arange(len(rows))
        h = 0.8 / len(PROTOCOLS)
        for k, proto in enumerate(PROTOCOLS):
            d = read[proto]
            vals = [metrics.fast_p(d[d[by].astype(str) == g], p) for g, p in rows]
            bars = left.barh(y + (k - 1) * h, vals, height=h, color=SERIES_COLORS[k], label=proto)
            left.bar_label(bars, labels=[f"{v:.2f}" for v in vals], padding=1.5, fontsize=6)
        left.set_yticks(y, [f"{g} (n={int((df[by].astype(str) == g).sum())}): fast$_{{{p:g}}}$" for g, p in rows])
        left.invert_yaxis()
        left.set_xlim(0, 1.12)
        left.set_xlabel(r"fast$_p$ (problems weighed alike)")
        left.set_title("correct, unflagged (and faster than eager), per protocol", loc="left", fontsize=7.5)
        left.tick_params(axis="y", length=0)
        counts = {g: int((df[by].astype(str) == g).sum()) for g in groups}
        causes = sorted(gap.columns) if len(gap) else []
        base = np.zeros(len(groups))
        reds = plt.get_cmap("Reds")
        for k, cause in enumerate(causes):
            share = np.array([gap[cause].get(g, 0) / counts[g] if g in gap.index else 0.0 for g in groups])
            right.barh(np.arange(len(groups)), share, left=base, color=reds(0.35 + 0.5 * k / max(1, len(causes))), label=cause, height=0.6)
            base += share
        for i, g in enumerate(groups):  # the count beside each bar; "none" where the protocols agree
            n_gap = int(gap.loc[g].sum()) if g in gap.index else 0
            right.text(base[i], i, f"  {n_gap} of {counts[g]}" if n_gap else f"  none of {counts[g]}",
                       va="center", ha="left", fontsize=6, color="0.2" if n_gap else "0.45")
        right.set_xlim(0, max(0.05, float(base.max()) * 1.35) if len(base) else 1)
        right.set_yticks(np.arange(len(groups)), groups)
        right.set_ylim(len(groups) - 0.5, -0.5)  # the first group on top, with or without bars
        right.set_xlabel("share of candidates")
        right.set_title("correct under kernelbench-v0, rejected under kbench: cause", loc="left", fontsize=7.5)
        right.tick_params(axis="y", length=0)
        fig.legend(*left.get_legend_handles_labels(), loc="outside lower left", ncol=len(PROTOCOLS), frameon=False,
                   handlelength=1.0, title="protocol", title_fontsize=6.5)
        if causes:
            fig.legend(*right.get_legend_handles_labels(), loc="outside lower right", ncol=min(3, len(causes)), frameon=False,
                       handlelength=1.0, title="cause of the rejection under kbench", title_fontsize=6.5)
        _title(fig, title or "The same verdicts under kbench, KernelBench and KernelBench v0", df)
    return fig
