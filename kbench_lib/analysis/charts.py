"""Figures of the results, failures and fusion analyses (each a function of a table those modules
compute; :mod:`.style` for the look). A figure with nothing to show raises :class:`.data.NoData`."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import ticker

from . import style
from .data import NoData

AGAINST = {"eager": "eager PyTorch", "compile": "torch.compile"}


def _panels(values) -> list:
    return sorted(pd.Series(list(values)).dropna().astype(str).unique())


def fast_p_curves(curve: pd.DataFrame, panel: str = "level", line: str = "model", against: str = "eager", df=None):
    """fast_p against p, one panel per ``panel`` value, one line per ``line`` value with its
    bootstrap band (from :func:`.results.fast_p_curve`)."""
    c = curve[curve["p"] > 0].dropna(subset=["fast_p"])
    if not len(c):
        raise NoData("no data for a fast_p curve: no kernel timings (a run without a GPU times no kernel)")
    panels = _panels(c[panel])
    colors = style.colors_for(c[line])
    with style.figure(style.FULL if len(panels) > 2 else style.COLUMN * len(panels), 2.2, ncols=len(panels), sharey=True) as (fig, axes):
        for ax, name in zip(axes[0], panels):
            for key, g in c[c[panel].astype(str) == name].groupby(line, sort=True):
                g = g.sort_values("p")
                ax.step(g["p"], g["fast_p"], where="post", color=colors[str(key)], lw=1.2, label=f"{key} ({int(g['n'].iloc[0])})")
                ax.fill_between(g["p"], g["lo"], g["hi"], step="post", color=colors[str(key)], alpha=0.18, lw=0)
            ax.axvline(1.0, color="0.5", lw=0.6, ls=":")
            ax.set_title(name)
            ax.set_ylim(0, 1.02)
            ax.grid(color="0.92", lw=0.5)
            ax.legend(frameon=True, framealpha=0.85, edgecolor="none", loc="best", fontsize=6, title="model (problems)", title_fontsize=6)
        axes[0][0].set_ylabel(r"fast$_p$")
        fig.supxlabel(f"threshold p (speedup over {AGAINST[against]})", fontsize=8)
        style.title(fig, rf"fast$_p$ against {AGAINST[against]} (band: 95% bootstrap over problems)", df)
    return fig


def stat_bars(table: pd.DataFrame, stat: str, ylabel: str, group: str = "level", bar: str = "model", log: bool = False,
              ref: float | None = None, df=None, title: str | None = None):
    """Grouped bars of ``stat`` with its interval (``<stat>_lo``/``_hi``): groups along x, one bar per
    ``bar`` value."""
    t = table.dropna(subset=[stat])
    if not len(t):
        raise NoData(f"no data for {stat}: no group has a value (speedups need kernel timings)")
    groups, bars = _panels(t[group]), _panels(t[bar])
    colors = style.colors_for(table[bar])
    width = 0.8 / len(bars)
    with style.figure(max(style.COLUMN, 0.5 * len(groups) * len(bars) + 1.2), 2.3) as (fig, axes):
        ax = axes[0][0]
        for j, b in enumerate(bars):
            g = t[t[bar].astype(str) == b].set_index(t[t[bar].astype(str) == b][group].astype(str)).reindex(groups)
            x = np.arange(len(groups)) - 0.4 + width * (j + 0.5)
            v = g[stat].to_numpy(float)
            err = np.vstack([v - g[f"{stat}_lo"].to_numpy(float), g[f"{stat}_hi"].to_numpy(float) - v])
            ax.bar(x, v, width * 0.9, color=colors[b], label=b, yerr=np.nan_to_num(err), capsize=1.5, error_kw={"lw": 0.6})
        if ref is not None:
            ax.axhline(ref, color="0.4", lw=0.7, ls="--")
        if log:
            from ..reports.plots import _ratio_axis

            _ratio_axis(ax, "y")
        ax.set_xticks(range(len(groups)), groups)
        ax.set_xlim(-0.5, len(groups) - 0.5)  # every group's slot in full, also where only some bars have a value
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", color="0.92", lw=0.5)
        # below the axes: inside, "best" still lands on a bar when every slot is full
        ax.legend(frameon=False, fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncols=min(len(bars), 4),
                  handlelength=1.0, columnspacing=1.0)
        style.title(fig, (title or ylabel) + " (bars: 95% bootstrap over problems)", df)
    return fig


def stacked_shares(counts: pd.DataFrame, title: str, df=None, colors: dict | None = None, xlabel: str = "share of candidates"):
    """Horizontal stacked bars: each row of ``counts`` (index: group, columns: categories) as shares."""
    if not len(counts) or counts.to_numpy().sum() == 0:
        raise NoData(f"no data for {title.lower()}")
    shares = counts.div(counts.sum(axis=1), axis=0)
    names = [f"{k} (n={int(counts.loc[k].sum())})" for k in shares.index]
    colors = colors or {c: style.color(i) for i, c in enumerate(shares.columns)}
    with style.figure(style.COLUMN, 0.24 * len(shares) + 1.0 + 0.14 * ((len(shares.columns) + 1) // 2)) as (fig, axes):
        ax = axes[0][0]
        left = np.zeros(len(shares))
        for col in shares.columns:
            ax.barh(names, shares[col], left=left, color=colors.get(col, "0.6"), label=str(col), height=0.62, edgecolor="white", linewidth=0.4)
            left += shares[col].to_numpy()
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel(xlabel)
        ax.tick_params(axis="y", length=0)
        fig.legend(loc="outside lower left", ncol=2, frameon=False, handlelength=1.0, columnspacing=1.0, fontsize=6)
        style.title(fig, title, df)
    return fig


def fusion_shares(table: pd.DataFrame, by: str = "model", df=None):
    """Per group, the share of the reference's operator calls its candidates took over into their own
    kernels against those left in the library (from :func:`.fusion.fusion_table`), trusted candidates only."""
    if "trusted" in table:
        table = table[table["trusted"].astype(bool)]
    if not len(table):
        raise NoData("no data for fusion shares: no trusted candidate with a profile")
    t = table.assign(in_library_ops=table["reference_ops"] - table["replaced_ops"])
    counts = t.groupby(by)[["replaced_ops", "in_library_ops"]].sum()
    counts.columns = ["in own kernels", "left in the library"]
    return stacked_shares(counts, "Reference operators: fused into own kernels or left in the library", df,
                          colors={"in own kernels": style.OKABE_ITO[0], "left in the library": style.OKABE_ITO[1]},
                          xlabel="share of the reference's operator calls")


def ops_per_kernel_hist(dist: pd.DataFrame, df=None):
    """Histogram of operators per fused kernel (from :func:`.fusion.ops_per_kernel`), one series per
    way of counting, each as shares of its own kernels."""
    if not len(dist):
        raise NoData("no data for operators per kernel")
    hi = int(np.ceil(dist["ops"].max()))
    bins = np.arange(0.5, hi + 1.5, 1.0)
    with style.figure(style.COLUMN, 2.2) as (fig, axes):
        ax = axes[0][0]
        for i, (how, g) in enumerate(sorted(dist.groupby("how"), key=lambda kv: kv[0])):
            label = ("torch.compile, from Inductor's kernel names" if how == "kernel name" else "candidates, replaced ops / own launches")
            # shares, not counts: the series differ in size by an order of magnitude
            ax.hist(g["ops"], bins=bins, weights=np.full(len(g), 1.0 / len(g)), color=style.color(i), alpha=0.6,
                    label=f"{label} (n={len(g)})")
        ax.set_xlabel("reference operators per fused kernel")
        ax.set_ylabel("share of kernels")
        ax.legend(frameon=False, fontsize=6, loc="upper right")
        style.title(fig, "Operators per fused kernel", df)
    return fig


def kernel_counts_plot(kc: pd.DataFrame, df=None):
    """Kernels launched by each candidate's forward: against the reference's count where recorded
    (log-log, the diagonal is 'as many as eager'), else per level."""
    d = kc.dropna(subset=["n_kernels"])
    if not len(d):
        raise NoData("no data for kernel counts")
    colors = style.colors_for(d["model"])
    with style.figure(style.COLUMN, 2.4) as (fig, axes):
        ax = axes[0][0]
        if "reference_n_kernels" in d and d["reference_n_kernels"].notna().any():
            d = d.dropna(subset=["reference_n_kernels"])
            for m, g in d.groupby("model"):
                ax.scatter(g["reference_n_kernels"], g["n_kernels"], s=10, color=colors[str(m)], label=str(m), linewidths=0)
            top = float(max(d["n_kernels"].max(), d["reference_n_kernels"].max())) * 1.5
            ax.plot([0.8, top], [0.8, top], color="0.5", lw=0.6, ls="--")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("kernels of the reference (eager)")
            ax.set_ylabel("kernels of the candidate")
            ax.legend(frameon=False, fontsize=6)
        else:
            levels = _panels(d["level"])
            for i, lv in enumerate(levels):
                v = d.loc[d["level"].astype(str) == lv, "n_kernels"].to_numpy(float)
                x = i + np.random.default_rng(i).uniform(-0.25, 0.25, len(v))
                ax.scatter(x, v, s=8, color=style.color(i), linewidths=0)
            ax.set_xticks(range(len(levels)), levels)
            ax.set_yscale("log")
            ax.set_ylabel("kernels per forward")
        style.title(fig, "Kernels launched per forward", df)
    return fig


def lines(table: pd.DataFrame, x: str, y: str, title: str, line: str = "model", df=None, ylabel: str | None = None):
    """One line per ``line`` value of ``y`` against ``x`` (scaling curves)."""
    if not len(table):
        raise NoData(f"no data for {title.lower()}")
    # a table of several devices or sizes (scaling curves group by them): one line per each too
    apart = [c for c in ("device_name", "small") if c in table and table[c].nunique(dropna=False) > 1]
    if apart:
        table = table.assign(_line=table[[line, *apart]].astype(str).agg(" · ".join, axis=1))
        line = "_line"
    colors = style.colors_for(table[line])
    with style.figure(style.COLUMN, 2.2) as (fig, axes):
        ax = axes[0][0]
        for key, g in table.groupby(line, sort=True):
            g = g.sort_values(x)
            ax.plot(g[x], g[y], marker="o", ms=3, lw=1.2, color=colors[str(key)], label=str(key))
        ax.set_xlabel(x)
        ax.set_ylabel(ylabel or y.replace("_", " "))
        if y in ("fast_p", "solved"):
            ax.set_ylim(0, 1.02)
        ax.grid(color="0.92", lw=0.5)
        ax.legend(frameon=False, fontsize=6)
        style.title(fig, title, df)
    return fig


def variant_speedups_plot(table: pd.DataFrame, df=None):
    """robust-kbench's generalisation figure: each candidate's speedup over eager on every other
    shape (y) against its speedup on the default shape it was optimised and timed on (x), log-log;
    below the diagonal, the kernel loses on the other shapes what it gained on its own. ``table``
    from :func:`.scaling.variant_speedups` on kernel-timed records."""
    d = table.dropna(subset=["speedup", "default_speedup"])
    d = d[(d["speedup"] > 0) & (d["default_speedup"] > 0)]
    if not len(d):
        raise NoData("no data for per-variant speedups: no kernel-timed record holds one")
    colors = style.colors_for(d["model"])
    with style.figure(style.COLUMN, 2.4) as (fig, axes):
        ax = axes[0][0]
        for m, g in d.groupby("model"):
            ax.scatter(g["default_speedup"], g["speedup"], s=10, color=colors[str(m)], label=f"{m} ({g['problem'].nunique()} problems)",
                       linewidths=0)
        lo = float(min(d["speedup"].min(), d["default_speedup"].min())) / 1.5
        hi = float(max(d["speedup"].max(), d["default_speedup"].max())) * 1.5
        ax.plot([lo, hi], [lo, hi], color="0.5", lw=0.6, ls="--")
        ax.axhline(1.0, color="0.5", lw=0.6, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):  # plain numbers at 1, 2, 5 per decade, no minor labels
            axis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(ticker.NullFormatter())
        ax.set_xlabel("default shape (optimised, timed)")
        ax.set_ylabel("other shapes")
        ax.grid(color="0.92", lw=0.5)
        ax.legend(frameon=False, fontsize=6)
        style.title(fig, "Speedup over eager: default shape against other shapes", df)
    return fig
