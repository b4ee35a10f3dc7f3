"""The papers' headline numbers per group (model, level, ...), with bootstrap confidence intervals
over problems.

The rules are :mod:`kbench_lib.scoring.metrics`'s: trusted = correct and unflagged; a task's result is its
attempt (a sample, a refine chain's best turn, an evolve search's best proposal:
``metrics.attempts``); every statistic is the mean over problems of the mean over that problem's
attempts, so each problem weighs the same however often it was sampled; speedups and
speed-of-light fractions only from kernel timings (``metrics.kernel_timed``), so a CPU run has
correctness and fast_0 but NaN (not measured) for the rest. Each problem is reduced once to its
rates (:func:`problem_rates`) and a bootstrap resample of problems is a weighted mean of them
(problems drawn with replacement, each with all its attempts: candidates of one problem are not
independent). Groups never mix strategies, precisions or sizes (:func:`distinguish`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..scoring import metrics
from ..generation.models import is_control

PS = (0.0, 0.5, 0.8, 1.0, 1.2, 1.5, 2.0, 3.0)  # the table's thresholds
CURVE_PS = tuple(np.round(np.linspace(0.0, 3.0, 61), 3))  # the curve's
N_BOOT = 1000
LEVEL = 0.95
SPLIT = ("strategy", "precision", "small")  # never averaged together within one model


def distinguish(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the model named apart wherever one model's rows mix strategies, precisions or
    sizes (``tune [evolve+verify]``, ``m [bf16]``, ``m [SMALL]``): a group never averages them."""
    if "model" not in df or not len(df):
        return df
    label = df["model"].astype(str)
    for col in SPLIT:
        if col not in df:
            continue
        vals = df[col].astype("string").fillna("")
        mixed = vals.groupby(df["model"].astype(str).to_numpy()).transform("nunique") > 1
        shown = vals.map(lambda v: "SMALL" if v == "True" else ("full" if v == "False" else v)) if col == "small" else vals
        label = label.where(~mixed.to_numpy(), label + " [" + shown + "]")
    return df.assign(model=label) if not label.equals(df["model"].astype(str)) else df


def _row_values(df: pd.DataFrame, ps) -> pd.DataFrame:
    """Per attempt: the values every statistic averages (NaN where a row has none)."""
    ok = metrics.trusted(df).to_numpy()
    timed = metrics.kernel_timed(df).to_numpy()
    out = {"problem": df["problem"].to_numpy(), "correct": df["correct"].fillna(False).astype(bool).to_numpy().astype(float),
           "fast_0": ok.astype(float), "timed": timed.astype(float)}
    eager = metrics.kernel_speedup(df, "eager").to_numpy()
    for p in ps:
        if p > 0:
            out[f"fast_{p:g}"] = (ok & np.nan_to_num(eager, nan=-1.0).__gt__(p)).astype(float)
    for against in ("eager", "compile"):
        s = metrics.kernel_speedup(df, against).to_numpy()
        good = ok & np.isfinite(s) & (s > 0)
        out[f"geomean_{against}"] = np.where(good, np.log(np.where(good, s, 1.0)), np.nan)  # mean logs, exp at the end
    sol = (df["sol_ms"].astype(float) / df["runtime_ms"].astype(float)).to_numpy()
    good = ok & timed & np.isfinite(sol) & (sol > 0)
    out["sol_fraction"] = np.where(good, sol, np.nan)
    return pd.DataFrame(out)


def problem_rates(df: pd.DataFrame, ps=PS) -> pd.DataFrame:
    """One row per problem: the mean over its attempts of each value (NaN where it has none)."""
    return _row_values(metrics.attempts(df), ps).groupby("problem", sort=True).mean()


def _stats(weights: np.ndarray, rates: pd.DataFrame, ps, any_timed: bool) -> dict:
    """Each statistic as the ``weights``-weighted mean over problems of their rates (problems
    without a value left out); ``weights`` is (problems,) or (resamples, problems)."""
    out = {}
    for name in ["correct", "fast_0", *[f"fast_{p:g}" for p in ps if p > 0], "geomean_eager", "geomean_compile", "sol_fraction"]:
        v = rates[name].to_numpy()
        have = np.isfinite(v)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (weights @ np.where(have, v, 0.0)) / (weights @ have.astype(float))
        if name.startswith("fast_") and name != "fast_0" and not any_timed:
            mean = np.full_like(mean, np.nan)
        out[name] = np.exp(mean) if name.startswith("geomean_") else mean
    return out


def headline(df: pd.DataFrame, ps=PS, n_boot: int = N_BOOT, level: float = LEVEL, seed: int = 0) -> dict:
    """The statistics of one group of rows with percentile bootstrap intervals over problems:
    {name: (value, low, high)} for correct, fast_p for each p, geomean_eager, geomean_compile,
    sol_fraction (mean of sol_ms / runtime over trusted kernel-timed attempts)."""
    if not len(df):
        return {}
    rates = problem_rates(df, ps)
    n = len(rates)
    timed = bool(rates["timed"].sum() > 0)
    point = _stats(np.ones(n), rates, ps, timed)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(float)
    boot = _stats(weights, rates, ps, timed)
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
    df = distinguish(df)
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
    df = distinguish(df)
    for key, g in df.groupby(list(by), dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        d = g if against == "eager" else g.assign(speedup_eager=g["speedup_compile"])
        stats = headline(d, ps, n_boot, level)
        for p in ps:
            v, lo, hi = stats["fast_0" if p <= 0 else f"fast_{p:g}"]
            rows.append({**dict(zip(by, key)), "p": float(p), "fast_p": v, "lo": lo, "hi": hi, "n": int(g["problem"].nunique())})  # problems, what the rates average over
    return pd.DataFrame(rows)


def fast_p_wide(curve: pd.DataFrame, by=("model", "level"), ps=PS) -> pd.DataFrame:
    """The curve's values at ``ps`` as a table: one row per group, one column per p."""
    keep = curve[np.isclose(curve["p"].to_numpy()[:, None], np.asarray(ps, float)[None, :]).any(axis=1)]
    wide = keep.pivot_table(index=list(by), columns="p", values="fast_p", dropna=False)
    wide.columns = [f"fast_{p:g}" for p in wide.columns]
    return wide.reset_index()


def has_kernel_timings(df: pd.DataFrame) -> bool:
    return bool(len(df)) and bool(metrics.kernel_timed(df).any())


def clock_control(df: pd.DataFrame) -> pd.DataFrame:
    """The clock control's rows per device and level: judged, correct, the median kernel speedup over
    eager (1.0 for an unbiased clock) and the share within 0.95-1.05; empty without such rows."""
    d = df[df["model"].map(is_control)] if len(df) else df
    if not len(d):
        return pd.DataFrame(columns=["device_name", "level", "judged", "correct", "median_speedup", "within_5pct"])
    d = d.assign(s=metrics.kernel_speedup(d, "eager"))
    rows = [{"device_name": dev, "level": level, "judged": len(g), "correct": int(g["correct"].fillna(False).sum()),
             "median_speedup": g["s"].median(), "within_5pct": g["s"].between(0.95, 1.05).sum() / max(1, g["s"].notna().sum())}
            for (dev, level), g in d.groupby(["device_name", "level"], dropna=False)]
    return pd.DataFrame(rows)
