"""Metrics over record rows (pandas DataFrames with :data:`kbench_lib.scoring.records.SCHEMA` columns).

Only trusted results count as speedups: a row is trusted when it is correct and carries no flag
(docs/THREAT_MODEL.md). That is the ``strict`` trust policy, every function's default; under ``no-cheat`` a
correct row is trusted unless a flag of class ``cheat`` marks it (a hazard or a shortcut flag does
not: :mod:`kbench_lib.scoring.flags`). Every function that reads trust takes ``policy``.

fast_p is KernelBench's: the share of tasks whose result is correct (here: trusted) and faster
than ``p`` times the baseline; every attempted task is in the denominator.

What one task's result is (:func:`attempts`): each sample of ``single`` is an attempt; a ``refine``
chain is one attempt, its best turn; an ``evolve`` search of a problem is one attempt, its best
proposal. Each problem weighs the same: a statistic is the mean over problems of the mean over that
problem's attempts (with one attempt per problem, KernelBench's fast_p exactly; with k samples, the
expected fast_p of one sample per problem), so a problem sampled more often does not count more.

Only kernel timings count as speedups: :func:`timing_kind` says where a row's times come from, and
only ``gpu`` rows (a CUDA device, the benchmark's full-size configuration) enter fast_p for p > 0,
geometric means and speedup figures. A Triton kernel on a machine without a GPU runs through
Triton's CPU interpreter, a Python emulation thousands of times slower than the kernel; a CPU
wall clock or a SMALL shape on a GPU says nothing about the benchmark's kernels either.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import flags as _flags

AGAINST = {"eager": "speedup_eager", "compile": "speedup_compile"}


def _col(against: str) -> str:
    try:
        return AGAINST[against]
    except KeyError:
        raise ValueError(f"against must be one of {sorted(AGAINST)}, not {against!r}") from None


# what each timing_kind means, for tables and notes
TIMING_KINDS = {
    "gpu": "GPU kernel timing at the benchmark's size",
    "gpu_small": "GPU timing at SMALL size (not the benchmark's configuration)",
    "triton_interpreter": "Triton's CPU interpreter (an emulation: not the kernel's speed)",
    "cpu": "CPU wall clock (not a GPU kernel's speed)",
    "unknown": "no device recorded",
}


def times_a_kernel(device: str | None, small: bool | None) -> bool:
    """Whether a judgement on ``device`` at this size times a GPU kernel at the benchmark's size: CUDA
    (``cuda`` or ``cuda:N``), not SMALL. The only timing that is a kernel speedup; the judge sets no
    speedup elsewhere (CPU times, Triton's interpreter and SMALL sizes stay runtimes), and
    :func:`timing_kind` reads rows by the same rule."""
    return str(device or "").startswith("cuda") and not small


def timing_kind(df: pd.DataFrame) -> pd.Series:
    """Where each row's timings come from; the one rule for what counts as a kernel speedup.

    ``gpu``: ``device`` is CUDA (``cuda`` or ``cuda:N``) and the configuration is not SMALL; the
    only kind that is a kernel timing. ``gpu_small``: CUDA at SMALL size. On any other device the
    judge runs Triton through its interpreter (``build.build_env`` sets ``TRITON_INTERPRET``
    exactly when the device is not CUDA), so ``backend == "triton"`` there is
    ``triton_interpreter``; everything else is ``cpu``. ``unknown``: no device recorded.
    """
    if "device" not in df:
        raise ValueError("rows lack the 'device' column: cannot tell kernel timings from CPU ones")
    device = df["device"].astype("string").fillna("")
    small = df["small"].astype("boolean").fillna(False).astype(bool) if "small" in df else pd.Series(False, index=df.index)
    backend = df["backend"].astype("string").fillna("") if "backend" in df else pd.Series("", index=df.index)
    gpu = device.str.startswith("cuda").astype(bool)
    kernel = pd.Series([times_a_kernel(d, s) for d, s in zip(device, small)], index=df.index, dtype=bool)
    kind = np.select(
        [kernel, gpu & small, (device == "").astype(bool), (backend == "triton").astype(bool)],
        ["gpu", "gpu_small", "unknown", "triton_interpreter"],
        "cpu",
    )
    return pd.Series(kind, index=df.index, dtype=object)


def kernel_timed(df: pd.DataFrame) -> pd.Series:
    """Rows whose timings are GPU kernel timings (:func:`timing_kind` ``gpu``)."""
    return timing_kind(df) == "gpu"


def kernel_speedup(df: pd.DataFrame, against: str = "eager") -> pd.Series:
    """The speedup column, NaN wherever the row's timing is not a kernel timing."""
    return df[_col(against)].astype(float).where(kernel_timed(df))


def trusted(df: pd.DataFrame, policy: str = "strict") -> pd.Series:
    """Per row: correct, and no flag that ``policy`` counts (strict: any flag; no-cheat: a flag of
    class cheat, :mod:`kbench_lib.scoring.flags`)."""
    policy = _flags.check_policy(policy)
    flagged = df["flags"].apply(lambda f: _flags.distrusted(f, policy)).astype(bool)
    return df["correct"].fillna(False).astype(bool) & ~flagged


def correctness_rate(df: pd.DataFrame, policy: str = "strict") -> float:
    """Share of tasks whose attempt is correct (flagged or not), problems weighed alike (``policy``
    picks each attempt's best row)."""
    policy = _flags.check_policy(policy)
    if not len(df):
        return math.nan
    df = attempts(df, policy=policy)
    return _per_problem_mean(df["correct"].fillna(False).astype(bool), df)


def trusted_rate(df: pd.DataFrame, policy: str = "strict") -> float:
    return fast_p(df, 0.0, policy=policy)


def attempt_keys(df: pd.DataFrame) -> pd.Series:
    """Per row, the attempt it belongs to (module docstring): run, model, strategy, problem, and the
    sample (a ``refine`` chain's index) except for ``evolve`` searches, which are one attempt."""
    cols = [c for c in ("run_id", "model", "strategy", "problem") if c in df]
    key = df[cols].astype(str).agg("\x1f".join, axis=1) if cols else pd.Series("", index=df.index)
    if "sample" not in df:
        return key
    evolve = df["strategy"].astype(str).str.startswith("evolve") if "strategy" in df else pd.Series(False, index=df.index)
    return key + np.where(evolve, "", "\x1f" + df["sample"].astype(str))


def attempts(df: pd.DataFrame, against: str = "eager", policy: str = "strict") -> pd.DataFrame:
    """One row per attempt: its best row (trusted under ``policy`` first, then the fastest kernel speedup)."""
    policy = _flags.check_policy(policy)
    if not len(df) or "problem" not in df:
        return df
    keys = attempt_keys(df)
    if not keys.duplicated().any():
        return df
    return _best_rows(df, keys, against, policy).sort_index()


def _best_rows(df: pd.DataFrame, keys: pd.Series, against: str, policy: str = "strict") -> pd.DataFrame:
    """For each value of ``keys``, its best row: trusted first, then the fastest kernel speedup."""
    d = df.assign(_k=keys.to_numpy(), _t=trusted(df, policy), _s=kernel_speedup(df, against).fillna(-1.0))
    d = d.sort_values(["_t", "_s"], ascending=False, kind="stable").drop_duplicates("_k")
    return d.drop(columns=["_k", "_t", "_s"])


def _per_problem_mean(values: pd.Series, df: pd.DataFrame) -> float:
    """Mean over problems of the mean of ``values`` (NaN left out) over each problem's rows."""
    v = values.astype(float)
    if "problem" not in df:
        return float(v.mean())
    per = v.groupby(df["problem"].to_numpy()).mean().dropna()
    return float(per.mean()) if len(per) else math.nan


def fast_p(df: pd.DataFrame, p: float, against: str = "eager", policy: str = "strict") -> float:
    """Share of tasks whose attempt is trusted (under ``policy``) and has a kernel speedup > p
    (module docstring: attempts, problems weighed alike); every attempted task is in the denominator.

    p <= 0: the trusted share, whatever the timing (KernelBench's fast_0 is correctness). p > 0:
    NaN when no row is a kernel timing (a run on a machine without a GPU measures no kernel)."""
    policy = _flags.check_policy(policy)
    if not len(df):
        return math.nan
    df = attempts(df, against, policy)
    if p <= 0:
        return _per_problem_mean(trusted(df, policy), df)
    if not kernel_timed(df).any():
        return math.nan
    speed = kernel_speedup(df, against)
    hit = trusted(df, policy) & speed.notna() & (speed > p)
    return _per_problem_mean(hit, df)


def geomean_speedup(df: pd.DataFrame, against: str = "eager", policy: str = "strict") -> float:
    """Geometric mean of kernel speedups over trusted attempts (under ``policy``), computed in log
    space: each problem's mean log speedup, averaged over the problems that have one."""
    policy = _flags.check_policy(policy)
    df = attempts(df, against, policy)
    speed = kernel_speedup(df, against)
    good = trusted(df, policy) & speed.notna() & (speed > 0)
    if not good.any():
        return math.nan
    logs = np.log(speed.where(good))
    return float(np.exp(_per_problem_mean(logs, df)))


def best_per_problem(df: pd.DataFrame, against: str = "eager", policy: str = "strict") -> pd.DataFrame:
    """One row per (model, problem): the best trusted speedup, or the first row if none is trusted."""
    policy = _flags.check_policy(policy)
    return _best_rows(df, df["model"].astype(str) + "\x1f" + df["problem"].astype(str), against, policy)


def summary(df: pd.DataFrame, by=("model", "level"), ps=(0.0, 1.0, 1.5, 2.0), policy: str = "strict") -> pd.DataFrame:
    """The fast_p table: the grouping columns, ``trust`` (the policy the table was read under),
    counts (``n`` rows, ``problems``), where the timings come from (:func:`timing_kind` of the timed
    rows), correctness, ``flagged`` (correct but not trusted under ``policy``), fast_p against eager
    and compile, geo-means (NaN without kernel timings); rates per attempt, problems weighed alike."""
    policy = _flags.check_policy(policy)
    rows = []
    if not len(df):
        return pd.DataFrame()
    for key, g in df.groupby(list(by), dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        row["trust"] = policy
        row["n"] = len(g)
        row["problems"] = g["problem"].nunique() if "problem" in g else len(g)
        row["timing"] = ", ".join(sorted(set(timing_kind(g)[g["speedup_eager"].notna()])))
        row["correct"] = correctness_rate(g, policy)
        a = attempts(g, policy=policy)
        row["flagged"] = _per_problem_mean(a["correct"].fillna(False).astype(bool) & ~trusted(a, policy), a)
        for p in ps:
            row[f"fast_{p:g}"] = fast_p(g, p, "eager", policy)
        if kernel_speedup(g, "compile").notna().any():
            for p in ps:
                row[f"fast_{p:g}_compile"] = fast_p(g, p, "compile", policy)
        row["geomean_eager"] = geomean_speedup(g, "eager", policy)
        row["geomean_compile"] = geomean_speedup(g, "compile", policy)
        rows.append(row)
    return pd.DataFrame(rows)


def flag_name(flags) -> str:
    """A flagged row's first flag's name (the text before its colon), e.g. ``library_passthrough``."""
    return str(flags[0]).split(":", 1)[0].strip() if flags is not None and len(flags) else ""


def failure_counts(df: pd.DataFrame, by=("model",), flag_names: bool = False, policy: str = "strict") -> pd.DataFrame:
    """How often each failure category (and 'flagged', 'trusted' under ``policy``) occurs; with
    ``flag_names``, flagged rows are counted by their first flag that ``policy`` counts
    (``flagged: <name>``)."""
    policy = _flags.check_policy(policy)
    flagged = df["flags"].apply(lambda f: f"flagged: {flag_name(_flags.counted(f, policy))}") if flag_names and len(df) else "flagged"
    outcome = np.where(df["failure"].notna(), df["failure"], np.where(trusted(df, policy), "trusted", flagged))
    return df.assign(outcome=outcome).groupby([*by, "outcome"]).size().unstack(fill_value=0)


def flag_class_counts(df: pd.DataFrame, by=("model",)) -> pd.DataFrame:
    """Correct rows' flags counted by class (``cheat``, ``hazard``, ``shortcut``; a row counts once
    for each class it carries), with ``correct`` (the correct rows) and ``unflagged`` (those without
    a flag) beside them, per group of ``by``."""
    cols = ["correct", "unflagged", *_flags.CLASSES]
    ok = df[df["correct"].fillna(False).astype(bool)] if len(df) else df
    if not len(ok):
        return pd.DataFrame(columns=[*by, *cols]).set_index(list(by)) if by else pd.DataFrame(columns=cols)
    found = ok["flags"].apply(_flags.classes)
    d = ok[list(by)].assign(correct=1, unflagged=found.map(lambda c: int(not c)).to_numpy(),
                            **{c: found.map(lambda cs, c=c: int(c in cs)).to_numpy() for c in _flags.CLASSES})
    if not by:
        return d[cols].sum().to_frame().T
    return d.groupby(list(by), dropna=False)[cols].sum()


def under_protocol(df: pd.DataFrame, protocol: str, policy: str = "strict") -> pd.DataFrame:
    """The rows as ``protocol`` reads them (:mod:`kbench_lib.scoring.protocols`), without judging again:
    ``correct``, ``trusted``, ``failure`` and ``cause`` recomputed from each row's ``configs`` and
    ``protocol`` set. Rows without ``configs`` (records written before protocols, and verdicts that
    ended before any configuration was compared: a build or load failure, a crash while timing) keep
    their verdict; the first read as judged under ``kbench``. ``trusted`` is set under ``policy``."""
    from . import protocols

    policy = _flags.check_policy(policy)
    protocol = protocols.check(protocol)
    out = df.copy()
    if not len(out):
        return out.assign(protocol=protocol) if len(out.columns) else out
    # (a Series of None built from a scalar holds NaN, which has no len(): one None per row)
    configs = out["configs"] if "configs" in out else pd.Series([None] * len(out), index=out.index, dtype=object)
    precision = out["precision"].fillna("fp32") if "precision" in out else pd.Series("fp32", index=out.index)
    correct, failure, cause = [], [], []
    for cfgs, prec, ok, fail, old_cause in zip(configs, precision, out["correct"], out["failure"],
                                               out["cause"] if "cause" in out else [None] * len(out)):
        cfgs = [dict(c) for c in cfgs] if cfgs is not None and len(cfgs) else None
        if cfgs is None:
            correct.append(bool(ok) if ok is not None and ok == ok else False)
            failure.append(fail)
            cause.append(old_cause if isinstance(old_cause, str) else (fail if isinstance(fail, str) else None))
            continue
        d = protocols.decide(cfgs, str(prec), protocol)
        correct.append(d["correct"])
        failure.append(d["failure"])
        cause.append(d["cause"])
    out["correct"], out["failure"], out["cause"] = correct, failure, cause
    out["protocol"] = protocol
    out["trusted"] = trusted(out, policy)
    return out


def protocol_summary(df: pd.DataFrame, ps=(0.0, 1.0, 1.5, 2.0), by=("model",), policy: str = "strict") -> pd.DataFrame:
    """:func:`summary` of the same rows under each protocol, one block of rows per protocol, trust
    read under ``policy``."""
    from .protocols import PROTOCOLS

    policy = _flags.check_policy(policy)
    parts = [summary(under_protocol(df, p, policy), by=by, ps=ps, policy=policy).assign(protocol=p) for p in PROTOCOLS]
    table = pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) else pd.DataFrame()
    return table[["protocol", *[c for c in table.columns if c != "protocol"]]] if len(table) else table


def protocol_gap(df: pd.DataFrame, loose: str = "kernelbench-v0", strict: str = "kbench", by=("model",)) -> pd.DataFrame:
    """What separates two protocols: rows correct under ``loose`` and rejected under ``strict``,
    counted by their cause under ``strict`` (shape specialisation, reduced precision, a failure).
    One row per group of ``by`` (its index; with no ``by``, one row), one column per cause (the
    columns' name is ``cause``); no gap is the same shape with no rows and no cause columns."""
    a, b = under_protocol(df, loose), under_protocol(df, strict)
    gap = b[a["correct"].astype(bool) & ~b["correct"].astype(bool)]
    causes = pd.Index([], name="cause")
    if not len(gap):
        index = pd.MultiIndex.from_arrays([[] for _ in by], names=list(by)) if len(by) > 1 else pd.Index([], name=by[0] if by else None)
        return pd.DataFrame(index=index, columns=causes)
    gap = gap.assign(cause=gap["cause"].fillna("unknown"))
    if not by:
        return gap["cause"].value_counts().sort_index().to_frame().T.reset_index(drop=True).rename_axis(columns="cause")
    return gap.groupby([*by, "cause"]).size().unstack(fill_value=0)
