"""The papers' headline numbers per group (model, level, ...), with bootstrap confidence intervals
over problems.

Every number is a ratio of sums over rows, so each problem is reduced once to its sums
(:func:`problem_sums`) and a bootstrap resample of problems is a weighted sum (problems drawn with
replacement, each keeping all its rows: candidates of one problem are not independent). The rules
are :mod:`kbench_lib.metrics`'s: trusted = correct and unflagged; fast_p over every row; speedups
and speed-of-light fractions only from kernel timings (``metrics.kernel_timed``), so a CPU run has
correctness and fast_0 but NaN (not measured) for the rest.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import metrics

PS = (0.0, 0.5, 0.8, 1.0, 1.2, 1.5, 2.0, 3.0)  # the table's thresholds
CURVE_PS = tuple(np.round(np.linspace(0.0, 3.0, 61), 3))  # the curve's
N_BOOT = 1000
LEVEL = 0.95


def _row_values(df: pd.DataFrame, ps) -> pd.DataFrame:
    """Per row: the numerators and denominators every statistic sums."""
    ok = metrics.trusted(df).to_numpy()
    timed = metrics.kernel_timed(df).to_numpy()
    out = {"problem": df["problem"].to_numpy(), "n": np.ones(len(df)), "correct": df["correct"].fillna(False).astype(bool).to_numpy(),
           "trusted": ok, "timed": timed}
    eager = metrics.kernel_speedup(df, "eager").to_numpy()
    for p in ps:
        out[f"hit_{p:g}"] = ok if p <= 0 else ok & np.nan_to_num(eager, nan=-1.0).__gt__(p)
    for against in ("eager", "compile"):
        s = metrics.kernel_speedup(df, against).to_numpy()
        good = ok & np.isfinite(s) & (s > 0)
        out[f"logsum_{against}"] = np.where(good, np.log(np.where(good, s, 1.0)), 0.0)
        out[f"logn_{against}"] = good
    sol = (df["sol_ms"].astype(float) / df["runtime_ms"].astype(float)).to_numpy()
    good = ok & timed & np.isfinite(sol) & (sol > 0)
    out["sol_sum"] = np.where(good, sol, 0.0)
    out["sol_n"] = good
    return pd.DataFrame(out)


def problem_sums(df: pd.DataFrame, ps=PS) -> pd.DataFrame:
    """One row per problem: the sums of :func:`_row_values` (numbers, not booleans)."""
    return _row_values(df, ps).groupby("problem", sort=True).sum(numeric_only=False).astype(float)


def _stats(sums: np.ndarray, cols: list[str], ps, any_timed: bool) -> dict:
    """Statistics from (weighted) column sums; ``sums`` is (..., columns)."""
    c = {name: sums[..., i] for i, name in enumerate(cols)}
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {"correct": c["correct"] / c["n"], "fast_0": c["trusted"] / c["n"]}
        for p in ps:
            if p > 0:
                out[f"fast_{p:g}"] = c[f"hit_{p:g}"] / c["n"] if any_timed else np.full_like(c["n"], np.nan)
        for against in ("eager", "compile"):
            out[f"geomean_{against}"] = np.where(c[f"logn_{against}"] > 0, np.exp(c[f"logsum_{against}"] / c[f"logn_{against}"]), np.nan)
        out["sol_fraction"] = np.where(c["sol_n"] > 0, c["sol_sum"] / c["sol_n"], np.nan)
    return out


def headline(df: pd.DataFrame, ps=PS, n_boot: int = N_BOOT, level: float = LEVEL, seed: int = 0) -> dict:
    """The statistics of one group of rows with percentile bootstrap intervals over problems:
    {name: (value, low, high)} for correct, fast_p for each p, geomean_eager, geomean_compile,
    sol_fraction (mean of sol_ms / runtime over trusted kernel-timed rows)."""
    if not len(df):
        return {}
    sums = problem_sums(df, ps)
    cols = list(sums.columns)
    mat = sums.to_numpy()
    timed = bool(sums["timed"].sum() > 0)
    point = _stats(mat.sum(axis=0), cols, ps, timed)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(len(mat), np.full(len(mat), 1.0 / len(mat)), size=n_boot).astype(float)
    boot = _stats(weights @ mat, cols, ps, timed)
    alpha = (1.0 - level) / 2.0
    out = {}
    for name, value in point.items():
        b = boot[name][np.isfinite(boot[name])]
        lo, hi = (np.quantile(b, [alpha, 1 - alpha]) if len(b) and np.isfinite(value) else (np.nan, np.nan))
        out[name] = (float(value), float(lo), float(hi))
    return out


def results_table(df: pd.DataFrame, by=("model", "level"), ps=PS, n_boot: int = N_BOOT, level: float = LEVEL) -> pd.DataFrame:
    """Per group: problems, candidates, where the timings come from, and each statistic with its
    bootstrap interval (columns ``<stat>``, ``<stat>_lo``, ``<stat>_hi``)."""
    rows = []
    if not len(df):
        return pd.DataFrame()
    for key, g in df.groupby(list(by), dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        row.update(problems=g["problem"].nunique(), candidates=len(g),
                   timing=", ".join(sorted(set(metrics.timing_kind(g)[g["runtime_ms"].notna()]))) or "none")
        for name, (v, lo, hi) in headline(g, ps, n_boot, level).items():
            row.update({name: v, f"{name}_lo": lo, f"{name}_hi": hi})
        rows.append(row)
    return pd.DataFrame(rows)


def fast_p_curve(df: pd.DataFrame, by=("model", "level"), ps=CURVE_PS, against: str = "eager", n_boot: int = 200,
                 level: float = LEVEL) -> pd.DataFrame:
    """fast_p against p in long form: one row per (group, p) with ``fast_p``, ``lo``, ``hi``; p = 0
    is the trusted share. Rows for p > 0 are NaN without kernel timings (not measured)."""
    rows = []
    for key, g in df.groupby(list(by), dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        d = g if against == "eager" else g.assign(speedup_eager=g["speedup_compile"])
        stats = headline(d, ps, n_boot, level)
        for p in ps:
            v, lo, hi = stats["fast_0" if p <= 0 else f"fast_{p:g}"]
            rows.append({**dict(zip(by, key)), "p": float(p), "fast_p": v, "lo": lo, "hi": hi, "n": len(g)})
    return pd.DataFrame(rows)


def fast_p_wide(curve: pd.DataFrame, by=("model", "level"), ps=PS) -> pd.DataFrame:
    """The curve's values at ``ps`` as a table: one row per group, one column per p."""
    keep = curve[np.isclose(curve["p"].to_numpy()[:, None], np.asarray(ps, float)[None, :]).any(axis=1)]
    wide = keep.pivot_table(index=list(by), columns="p", values="fast_p", dropna=False)
    wide.columns = [f"fast_{p:g}" for p in wide.columns]
    return wide.reset_index()


def has_kernel_timings(df: pd.DataFrame) -> bool:
    return bool(len(df)) and bool(metrics.kernel_timed(df).any())
