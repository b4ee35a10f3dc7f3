"""The audit of a published corpus against its claims, from the records of one judged batch.

A corpus model (:mod:`kbench_lib.generation.corpus`) records each kernel with the speedup its
authors claimed (``claim_speedup``). Judged once under the corpus's own protocol (``cuda-l1`` for
CUDA-L1: eval mode, the declared shape, 1e-2), the same records read under kbench's (every shape,
fp32 at 1e-4, training mode, the guards) without judging again (:func:`kbench_lib.scoring.metrics.under_protocol`).

- :func:`audit_table`: per kernel, the claim beside the speedup measured on this GPU, whether the
  corpus's protocol and kbench's accept it, kbench's cause of a rejection, its flags by class, and
  one ``outcome`` word (:data:`OUTCOMES`).
- :func:`audit_summary`: the summary row (claimed and reproduced means and medians, kbench's fast_0
  and fast_1 under strict and no-cheat trust, counts by cause and flag class).
- :func:`waterfall`: from the claimed geometric mean to kbench's, step by step (no code, failures by
  cause, flags by class, the rest's speedups as measured on this GPU), every task counted at each
  step (a task that does not count keeps PyTorch: 1.0x).
- :func:`claims_figure` and :func:`waterfall_figure`: the two figures.

Speedups count only where a GPU timed a kernel (:func:`kbench_lib.scoring.metrics.kernel_timed`); on a
machine without a GPU the measured columns are empty and the figures say so.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pathlib import Path

from ..scoring import flags, metrics
from ..core import provenance
from . import style
from .data import NoData

# a kernel's outcome, worst first: no code; rejected under the corpus's own protocol; accepted there
# but rejected by kbench's (shape variants, fp32 tolerance, training mode); accepted and flagged (by
# the worst class); trusted
OUTCOMES = ("no code", "wrong under its own protocol", "wrong under kbench only", "cheat", "hazard", "shortcut", "trusted")
OUTCOME_COLORS = {"no code": "#999999", "wrong under its own protocol": "#D55E00", "wrong under kbench only": "#CC79A7",
                  "cheat": "#000000", "hazard": "#E69F00", "shortcut": "#56B4E9", "trusted": "#009E73"}
CLASS_ORDER = ("cheat", "hazard", "shortcut")
MIN_STEP_TASKS = 3  # a failure cause with fewer tasks joins the waterfall's "other causes" step


def _worst_class(fl) -> str | None:
    found = set(flags.classes(fl if fl is not None else []))
    return next((c for c in CLASS_ORDER if c in found), None)


def audit_table(df: pd.DataFrame, protocol: str = "cuda-l1", policy: str = "strict") -> pd.DataFrame:
    """One row per kernel of a corpus run (module docstring). ``protocol``: the corpus's own."""
    if not len(df):
        raise NoData("no records to audit")
    own = metrics.under_protocol(df, protocol, policy=policy)
    kb = metrics.under_protocol(df, "kbench", policy=policy)
    speed = metrics.kernel_speedup(df, "eager")
    out = pd.DataFrame({
        "level": df["level"].to_numpy(), "problem": df["problem"].to_numpy(),
        "corpus_row": df["corpus_row"].to_numpy() if "corpus_row" in df else None,
        "backend": df["backend"].to_numpy(),
        "claim_speedup": pd.to_numeric(df.get("claim_speedup"), errors="coerce").to_numpy(),
        "measured_speedup": speed.to_numpy(),
        "correct_own": own["correct"].astype(bool).to_numpy(), "cause_own": own["cause"].to_numpy(),
        "correct_kbench": kb["correct"].astype(bool).to_numpy(), "cause_kbench": kb["cause"].to_numpy(),
        "flags": df["flags"].to_numpy(),
    }, index=df.index)
    out["flag_classes"] = [", ".join(sorted(set(flags.classes(f if f is not None else [])))) for f in out["flags"]]
    out["worst_class"] = [_worst_class(f) for f in out["flags"]]
    out["outcome"] = [_outcome(r) for r in out.itertuples()]
    return out.sort_values(["level", "problem"], kind="stable").reset_index(drop=True)


def _outcome(r) -> str:
    if r.cause_own == "no_code":
        return "no code"
    if not r.correct_own:
        return "wrong under its own protocol"
    if not r.correct_kbench:
        return "wrong under kbench only"
    return r.worst_class if isinstance(r.worst_class, str) else "trusted"


def _stats(x: pd.Series) -> tuple[float, float]:
    x = x.dropna()
    return (float(x.mean()), float(x.median())) if len(x) else (math.nan, math.nan)


def audit_summary(df: pd.DataFrame, corpus: str, protocol: str = "cuda-l1", wall_s: float | None = None) -> dict:
    """The audit's summary row (module docstring): ``claimed_*`` over the kernels with a claim,
    ``reproduced_*`` over the kernels correct under ``protocol`` with a GPU time, kbench's fast_p
    over every task (no code and failures count as not fast). ``wall_s`` is the last invocation's
    (an audit resumed with its ``--run-id`` judges in several); ``judge_s_total`` sums every
    judgement's own seconds, whichever invocation made it (builds made ahead of the judgements are
    not in it), and ``git_shas`` names the commits that judged."""
    t = audit_table(df, protocol)
    claimed = t["claim_speedup"]
    reproduced = t.loc[t["correct_own"] & t["measured_speedup"].notna(), "measured_speedup"]
    kb = {policy: metrics.under_protocol(df, "kbench", policy=policy) for policy in flags.POLICIES}
    names = df["device_name"].dropna().astype(str) if "device_name" in df else pd.Series(dtype=str)
    judge_total, judge_median = _judge_seconds(df)
    row = {
        "corpus": corpus, "protocol": protocol, "device_name": names.mode().iloc[0] if len(names) else None,
        "kernels": int(len(t)), "with_code": int((t["outcome"] != "no code").sum()),
        "timed_on_gpu": int(t["measured_speedup"].notna().sum()), "wall_s": wall_s,
        "judge_s_total": judge_total, "judge_s_median": judge_median,
        "git_shas": sorted(df["git_sha"].dropna().astype(str).str[:7].unique())
        if "git_sha" in df else [],
        "claimed_mean": _stats(claimed)[0], "claimed_median": _stats(claimed)[1], "claimed_n": int(claimed.notna().sum()),
        "reproduced_mean": _stats(reproduced)[0], "reproduced_median": _stats(reproduced)[1], "reproduced_n": int(len(reproduced)),
        "correct_own": int(t["correct_own"].sum()), "correct_kbench": int(t["correct_kbench"].sum()),
    }
    for policy, d in kb.items():
        key = policy.replace("-", "_")
        row[f"kbench_fast_0_{key}"] = metrics.fast_p(d, 0.0, policy=policy)
        row[f"kbench_fast_1_{key}"] = metrics.fast_p(d, 1.0, policy=policy)
        row[f"kbench_geomean_{key}"] = metrics.geomean_speedup(d, policy=policy)
    row["by_outcome"] = {o: int((t["outcome"] == o).sum()) for o in OUTCOMES}
    row["by_cause_kbench"] = {str(k): int(v) for k, v in t.loc[~t["correct_kbench"], "cause_kbench"].fillna("unknown").value_counts().items()}
    row["by_cause_own"] = {str(k): int(v) for k, v in t.loc[~t["correct_own"], "cause_own"].fillna("unknown").value_counts().items()}
    counts = metrics.flag_class_counts(df, by=())  # correct rows (under the run's protocol), once per class they carry
    row["by_flag_class"] = {c: int(counts[c].iloc[0]) if len(counts) else 0 for c in CLASS_ORDER}
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}


def waterfall(t: pd.DataFrame) -> pd.DataFrame:
    """From the claimed geometric mean to kbench's, one step at a time, over the kernels with a claim.
    Each task starts at its claim; each step sets the tasks of one kind to 1.0 (it does not count:
    the user keeps PyTorch): no code, then kbench's failures by cause (largest first; causes of
    fewer than :data:`MIN_STEP_TASKS` tasks, where there are two or more, as one step), then
    flagged results by class (cheat, hazard, shortcut); the last step puts the trusted kernels'
    measured speedups in place of their claims (1.0 where a trusted kernel has no GPU time).
    Rows: ``step``, ``geomean`` after it, ``tasks`` it changed."""
    d = t[t["claim_speedup"].notna() & (t["claim_speedup"] > 0)].copy()
    if not len(d):
        raise NoData("no kernel has a claimed speedup")
    value = d["claim_speedup"].astype(float).copy()
    steps = [("claimed", _geomean(value), len(d))]

    def step(name: str, mask: pd.Series, new) -> None:
        mask = mask & value.notna()
        value.loc[mask] = new if np.isscalar(new) else new[mask]
        steps.append((name, _geomean(value), int(mask.sum())))

    gone = d["outcome"] == "no code"
    step("no code", gone, 1.0)
    failing = ~d["correct_kbench"] & ~gone
    cause = d["cause_kbench"].fillna("unknown")
    counts = cause[failing].value_counts()
    rare = list(counts[counts < MIN_STEP_TASKS].index) if (counts < MIN_STEP_TASKS).sum() > 1 else []
    for name in counts.index.drop(rare):
        step(f"fails: {name}", failing & (cause == name), 1.0)
    if rare:
        step(f"fails: {len(rare)} other causes", failing & cause.isin(rare), 1.0)
    correct = d["correct_kbench"] & ~gone
    for cls in CLASS_ORDER:
        if (correct & (d["worst_class"] == cls)).any():
            step(f"flagged: {cls}", correct & (d["worst_class"] == cls), 1.0)
    trusted = correct & d["worst_class"].isna()
    step("measured on this GPU", trusted, d["measured_speedup"].fillna(1.0))
    return pd.DataFrame(steps, columns=["step", "geomean", "tasks"])


def _judge_seconds(df: pd.DataFrame) -> tuple[float | None, float | None]:
    """(sum, median) of the judgements' own seconds; (None, None) where no record has them."""
    x = pd.to_numeric(df["judge_s"], errors="coerce").dropna() if "judge_s" in df else pd.Series(dtype=float)
    return (round(float(x.sum()), 1), round(float(x.median()), 2)) if len(x) else (None, None)


def _geomean(x: pd.Series) -> float:
    x = x.astype(float)
    x = x[x > 0]
    return float(np.exp(np.log(x).mean())) if len(x) else math.nan


def claims_figure(t: pd.DataFrame, title: str = "Claimed against measured speedup"):
    """Per level, each timed kernel's claimed speedup (x) against the speedup measured under the
    corpus's protocol on this GPU (y), log-log, the diagonal drawn, coloured by outcome."""
    d = t[t["claim_speedup"].notna() & t["measured_speedup"].notna() & (t["claim_speedup"] > 0) & (t["measured_speedup"] > 0)]
    if not len(d):
        raise NoData("no kernel has both a claim and a speedup timed on a GPU")
    levels = sorted(d["level"].unique())
    with style.figure(width=min(style.FULL, 2.5 * len(levels) + 0.4), height=2.6, ncols=len(levels)) as (fig, axes):
        lo = float(min(d["claim_speedup"].min(), d["measured_speedup"].min())) / 1.5
        hi = float(max(d["claim_speedup"].max(), d["measured_speedup"].max())) * 1.5
        for ax, level in zip(axes[0], levels):
            g = d[d["level"] == level]
            ax.plot([lo, hi], [lo, hi], color="#999999", lw=0.8, zorder=0)
            for outcome in OUTCOMES:
                h = g[g["outcome"] == outcome]
                if len(h):
                    ax.scatter(h["claim_speedup"], h["measured_speedup"], s=12, color=OUTCOME_COLORS[outcome],
                               label=f"{outcome} ({len(h)})", edgecolors="none", alpha=0.9)
            ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="claimed speedup",
                   title=f"{level} ({len(g)} timed of {int((t['level'] == level).sum())})")
            ax.legend(fontsize=6, loc="upper left", frameon=False)
        axes[0][0].set_ylabel("measured speedup (its protocol)")
        style.title(fig, title)
    return fig


def waterfall_figure(w: pd.DataFrame, title: str = "From the claimed geometric mean to kbench's"):
    """The waterfall of :func:`waterfall`: the claimed bar, each step's change, the end bar."""
    if not len(w):
        raise NoData("no waterfall steps")
    with style.figure(width=style.FULL, height=2.8) as (fig, axes):
        ax = axes[0][0]
        values = w["geomean"].to_numpy(dtype=float)
        x = np.arange(len(w))
        prev = np.r_[values[0], values[:-1]]
        for i, (v, p) in enumerate(zip(values, prev)):
            if i == 0:
                ax.bar(i, v, color="#0072B2", width=0.7)
            else:
                lo, hi = sorted((p, v))
                ax.bar(i, hi - lo, bottom=lo, color="#D55E00" if v < p else "#009E73", width=0.7)
            ax.annotate(f"{v:.2f}x", (i, max(v, p)), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=6)
        ax.bar(len(w), values[-1], color="#0072B2", width=0.7)
        ax.annotate(f"{values[-1]:.2f}x", (len(w), values[-1]), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=6)
        labels = [f"{s} ({n})" if i else s for i, (s, n) in enumerate(zip(w["step"], w["tasks"]))] + ["kbench"]
        ax.set_xticks(np.r_[x, len(w)], labels, rotation=45, ha="right", fontsize=6)
        ax.axhline(1.0, color="#999999", lw=0.8)
        ax.set_ylabel("geometric mean speedup")
        style.title(fig, title)
    return fig


def corpus_name(corpus_spec: str) -> str:
    """A corpus spec as a name for files: ``cuda-l1:.../h100.json`` -> ``cuda-l1-h100``."""
    fmt, _, path = corpus_spec.partition(":")
    return provenance.slug(f"{fmt}-{Path(path).stem}")


def audit_outputs(df: pd.DataFrame, corpus_spec: str, out_dir, figures_dir, wall_s: float | None = None,
                  protocol: str = "cuda-l1", date: str | None = None) -> dict:
    """The audit's summary row (``<out_dir>/<device>/audit-<corpus>-<date>.json``), its per-kernel
    table beside it (CSV) and its figures (``<figures_dir>/<device>/audit-<corpus>-claims`` and
    ``-waterfall``, PDF and PNG); {name: paths}. A figure without data is left out, with the reason
    printed."""
    import datetime as dt
    import json


    name = corpus_name(corpus_spec)
    summary = audit_summary(df, name, protocol, wall_s)
    dev = provenance.slug(summary["device_name"] or "unknown-device")
    date = date or dt.date.today().isoformat()
    out = Path(out_dir) / dev
    out.mkdir(parents=True, exist_ok=True)
    made = {}
    table = audit_table(df, protocol)
    summary["waterfall"] = waterfall(table).to_dict("records") if table["claim_speedup"].notna().any() else []
    path = out / f"audit-{name}-{date}.json"
    path.write_text(json.dumps(summary, indent=1, default=str) + "\n")
    made["summary"] = [path]
    csv = out / f"audit-{name}-{date}-kernels.csv"
    table.drop(columns=["flags"]).to_csv(csv, index=False, float_format="%.6g")
    made["kernels"] = [csv]
    figs = Path(figures_dir) / dev
    for key, draw in (("claims", lambda: claims_figure(table, f"{name}: claimed against measured ({protocol})")),
                      ("waterfall", lambda: waterfall_figure(waterfall(table), f"{name}: claimed to kbench"))):
        try:
            fig = draw()
        except NoData as e:
            print(f"audit-{name}-{key}: not drawn, {e}")
            continue
        made[key] = style.save(fig, figs / f"audit-{name}-{key}")
    return made


__all__ = ["OUTCOMES", "audit_outputs", "audit_summary", "audit_table", "claims_figure", "corpus_name", "waterfall", "waterfall_figure"]
