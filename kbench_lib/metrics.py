"""Metrics over record rows (pandas DataFrames with :data:`kbench_lib.records.SCHEMA` columns).

Only trusted results count as speedups: a row is trusted when it is correct and carries no flag
(THREATS.md). fast_p is KernelBench's: the share of tasks whose result is correct (here: trusted)
and faster than ``p`` times the baseline; every attempted task is in the denominator.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

AGAINST = {"eager": "speedup_eager", "compile": "speedup_compile"}


def _col(against: str) -> str:
    try:
        return AGAINST[against]
    except KeyError:
        raise ValueError(f"against must be one of {sorted(AGAINST)}, not {against!r}") from None


def trusted(df: pd.DataFrame) -> pd.Series:
    flags = df["flags"].apply(lambda f: f is not None and len(f) > 0)
    return df["correct"].fillna(False).astype(bool) & ~flags


def correctness_rate(df: pd.DataFrame) -> float:
    return float(df["correct"].fillna(False).astype(bool).mean()) if len(df) else math.nan


def trusted_rate(df: pd.DataFrame) -> float:
    return float(trusted(df).mean()) if len(df) else math.nan


def fast_p(df: pd.DataFrame, p: float, against: str = "eager") -> float:
    """Share of rows that are trusted and have speedup > p (p=0: trusted share with a timing)."""
    if not len(df):
        return math.nan
    speed = df[_col(against)].astype(float)
    hit = trusted(df) & speed.notna() & (speed > p)
    return float(hit.mean())


def geomean_speedup(df: pd.DataFrame, against: str = "eager") -> float:
    """Geometric mean of speedups over trusted rows, computed in log space."""
    speed = df.loc[trusted(df), _col(against)].astype(float)
    speed = speed[speed.notna() & (speed > 0)]
    if not len(speed):
        return math.nan
    return float(np.exp(np.log(speed.to_numpy()).mean()))


def best_per_problem(df: pd.DataFrame, against: str = "eager") -> pd.DataFrame:
    """One row per (model, problem): the best trusted speedup, or the first row if none is trusted."""
    col = _col(against)
    d = df.assign(_t=trusted(df), _s=df[col].astype(float).fillna(-1.0))
    d = d.sort_values(["_t", "_s"], ascending=False)
    return d.drop_duplicates(["model", "problem"]).drop(columns=["_t", "_s"])


def summary(df: pd.DataFrame, by=("model", "level"), ps=(0.0, 1.0, 1.5, 2.0)) -> pd.DataFrame:
    """The fast_p table: counts, correctness, flags, fast_p against eager and compile, geo-means."""
    rows = []
    if not len(df):
        return pd.DataFrame()
    for key, g in df.groupby(list(by), dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        row["n"] = len(g)
        row["correct"] = correctness_rate(g)
        row["flagged"] = float((g["correct"].fillna(False).astype(bool) & ~trusted(g)).mean())
        for p in ps:
            row[f"fast_{p:g}"] = fast_p(g, p, "eager")
        if g["speedup_compile"].notna().any():
            for p in ps:
                row[f"fast_{p:g}_compile"] = fast_p(g, p, "compile")
        row["geomean_eager"] = geomean_speedup(g, "eager")
        row["geomean_compile"] = geomean_speedup(g, "compile")
        rows.append(row)
    return pd.DataFrame(rows)


def failure_counts(df: pd.DataFrame, by=("model",)) -> pd.DataFrame:
    """How often each failure category (and 'flagged', 'trusted') occurs."""
    outcome = np.where(
        df["failure"].notna(), df["failure"], np.where(trusted(df), "trusted", "flagged")
    )
    return df.assign(outcome=outcome).groupby([*by, "outcome"]).size().unstack(fill_value=0)
