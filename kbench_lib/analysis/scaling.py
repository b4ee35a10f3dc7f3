"""Test-time scaling and generalisation: best-of-k, refinement turns, evolutionary progress,
verifier accuracy, per-variant speedups, forward against backward tasks.

Strategies other than single sampling add record columns (kbench_lib.strategies: ``strategy``,
``turn`` (a refine chain's turn, an evolve search's generation), ``parent_ids``, ``operation``,
``verify_decisions``, ``judged``); each function here needs some of them, and raises
:class:`.data.NoData` saying which when the records lack them or the rows to use them. Hand-made
records may also carry ``generation`` and ``verifier`` (accept/reject) directly. A *success*
is a trusted candidate (p = 0) or a trusted one with a kernel speedup over eager above p.
"""
from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from ..scoring import metrics
from .data import NoData, present, require

INDEX = Path(__file__).resolve().parents[2] / "problems" / "index.csv"


def success(df: pd.DataFrame, p: float = 0.0, against: str = "eager") -> pd.Series:
    """Per row: trusted (p <= 0), or trusted and faster than p times the baseline (kernel timings
    only; :class:`NoData` when no row has one)."""
    ok = metrics.trusted(df)
    if p <= 0:
        return ok
    if not metrics.kernel_timed(df).any():
        raise NoData(f"no data for fast_{p:g}: no kernel timings (a run without a GPU times no kernel); use p = 0")
    return ok & (metrics.kernel_speedup(df, against).fillna(-1.0) > p)


def _groups(df: pd.DataFrame, by) -> list:
    """``by`` plus ``device_name`` and ``small`` where the records carry them: a curve never pools
    timings or outcomes of different devices or sizes (callers may pass records of several)."""
    return [*by, *(c for c in ("device_name", "small") if c in df and c not in by)]


def _run(df: pd.DataFrame) -> list:
    """``["run_id"]`` where the records carry it: samples, trajectories and searches of different runs
    of one model are different ones (two runs both numbering their samples from 0 never merge)."""
    return ["run_id"] if "run_id" in df else []


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate that at least one of k samples drawn from n (c of them good) is good."""
    if k > n:
        return math.nan
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def best_of_k(df: pd.DataFrame, p: float = 0.0, ks=None, by=("model",)) -> pd.DataFrame:
    """fast_p of the best of k samples per problem, for k = 1 .. (most samples a problem has),
    averaged over the problems with at least k samples (``problems``) (the unbiased pass@k estimator over each problem's samples; a sample's
    result is its best turn). A sample is (run_id, problem, sample): the samples of every run of a
    group count together, each once. Groups are ``by`` plus device_name and small where present.
    Long form: by..., [device_name, small,] k, fast_p, problems."""
    require(df, ["sample"], "best-of-k")
    by = _groups(df, by)
    d = df.assign(_ok=success(df, p))
    per_sample = d.groupby([*by, *_run(d), "problem", "sample"], dropna=False)["_ok"].max().reset_index()
    per_problem = per_sample.groupby([*by, "problem"], dropna=False)["_ok"].agg(["size", "sum"]).reset_index()
    if per_problem["size"].max() < 2:
        raise NoData("no data for best-of-k: one sample per problem (run with --samples K, K > 1)")
    rows = []
    for key, g in per_problem.groupby(list(by), dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        kmax = int(g["size"].max())
        for k in (ks or range(1, kmax + 1)):
            vals = [pass_at_k(int(n), int(c), int(k)) for n, c in zip(g["size"], g["sum"])]
            vals = [v for v in vals if not math.isnan(v)]
            if vals:
                rows.append({**dict(zip(by, key)), "k": int(k), "fast_p": float(np.mean(vals)), "problems": len(vals), "p": p})
    return pd.DataFrame(rows)


def refinement_curve(df: pd.DataFrame, p: float = 0.0, by=("model", "strategy")) -> pd.DataFrame:
    """fast_p after each refinement turn: a trajectory (run_id, problem, sample) succeeds by turn t when any
    of its turns up to t did; one that stopped earlier keeps its last state. Long form: by..., turn,
    fast_p, trajectories (groups: ``by`` plus device_name and small where present)."""
    require(df, ["turn"], "refinement turns")
    if "strategy" in df:  # an evolve search numbers its generations in the same column
        df = df[df["strategy"].isna() | df["strategy"].isin(["refine", "single"])]
    if not len(df) or int(df["turn"].fillna(0).max()) < 1:
        raise NoData("no data for refinement turns: every record is a first turn (run a multi-turn strategy, e.g. --strategy refine)")
    by = _groups(df, by)
    d = df.assign(_ok=success(df, p), turn=df["turn"].fillna(0).astype(int))
    rows = []
    for key, g in d.groupby(list(by), dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        last = int(g["turn"].max())
        traj = g.groupby([*_run(g), "problem", "sample", "turn"], dropna=False)["_ok"].max().unstack("turn").reindex(columns=range(last + 1))
        best = traj.astype(float).ffill(axis=1).fillna(0.0).cummax(axis=1)
        for t in range(last + 1):
            rows.append({**dict(zip(by, key)), "turn": t, "fast_p": float(best[t].mean()), "trajectories": len(best), "p": p})
    return pd.DataFrame(rows)


def evolution_progress(df: pd.DataFrame, by=("model",)) -> pd.DataFrame:
    """Per generation of an evolutionary search: the share of problems with a trusted candidate so
    far, and the geometric mean over those problems of the best kernel speedup so far (NaN without
    kernel timings); a problem whose search ended earlier counts with its final best. A search is a
    run's problem (run_id, problem): two runs of one model are two searches. Groups: ``by`` plus
    device_name and small where present. Long form: by..., generation, solved, best_speedup_geomean, candidates."""
    df = with_generation(df)
    require(df, ["generation"], "evolutionary progress", "records of --strategy evolve number their generations in turn")
    d = df[df["generation"].notna()].assign(_ok=metrics.trusted(df), _s=metrics.kernel_speedup(df, "eager"))
    d = d.assign(generation=d["generation"].astype(int), _s=d["_s"].where(d["_ok"]))
    by, search = _groups(d, by), [*_run(d), "problem"]  # one search: a run's problem
    rows = []
    for key, g in d.groupby(list(by), dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        gens = range(int(g["generation"].min()), int(g["generation"].max()) + 1)
        ok = g.groupby([*search, "generation"], dropna=False)["_ok"].max().unstack().reindex(columns=gens).astype(float).fillna(0).cummax(axis=1)
        # best so far, carried past a problem's last generation (a search that stopped early keeps
        # its best): left out, later generations averaged over the longer searches only
        sp = g.groupby([*search, "generation"], dropna=False)["_s"].max().unstack().reindex(columns=gens).cummax(axis=1).ffill(axis=1)
        for gen in gens:
            s = sp[gen].dropna()
            s = s[s > 0]
            rows.append({**dict(zip(by, key)), "generation": gen, "solved": float(ok[gen].mean()),
                         "best_speedup_geomean": float(np.exp(np.log(s).mean())) if len(s) else math.nan,
                         "candidates": int((g["generation"] == gen).sum())})
    return pd.DataFrame(rows)


ACCEPT = {"accept", "accepted", "pass", "passed", "correct", "yes", "true", "1", "keep"}


def with_generation(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with a ``generation`` column: as recorded, else an evolve search's ``turn``."""
    if "generation" in df or "turn" not in df or "strategy" not in df:
        return df
    evolve = df["strategy"].astype(str).str.startswith("evolve")
    return df.assign(generation=df["turn"].where(evolve)) if evolve.any() else df


def with_verifier(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with a ``verifier`` column: as recorded, else from the strategies' ``verify_decisions``
    (accepted when no verifier said fail; null where no verifier decided)."""
    if "verifier" in df or "verify_decisions" not in df:
        return df

    def accept(decisions):
        if decisions is None or (isinstance(decisions, float) and math.isnan(decisions)):
            return None
        pairs = list(decisions.items()) if isinstance(decisions, dict) else list(decisions)
        return None if not pairs else all(str(d).lower() != "fail" for _, d in pairs)

    return df.assign(verifier=df["verify_decisions"].map(accept))


def _accepts(v) -> bool | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, dict):
        v = v.get("accept", v.get("decision"))
        return _accepts(v)
    return str(v).strip().lower() in ACCEPT


def verifier_accuracy(df: pd.DataFrame, by=("model",)) -> pd.DataFrame:
    """The verifier's decisions (``verifier``: accept/reject, a bool, or a dict with ``accept``)
    against the judge's (trusted or not): per group n, accuracy, precision and recall of its
    accepts, false-accept rate (accepted but not trusted, of the untrusted)."""
    df = with_verifier(df)
    require(df, ["verifier"], "verifier accuracy", "records of --strategy verify (or --verify) carry verify_decisions")
    d = df.assign(_acc=df["verifier"].map(_accepts), _ok=metrics.trusted(df))
    d = d[d["_acc"].notna()]
    if not len(d):
        raise NoData("no data for verifier accuracy: no record holds a verifier decision")
    rows = []
    for key, g in d.groupby(list(by), dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        acc, ok = g["_acc"].astype(bool), g["_ok"].astype(bool)
        tp, fp, fn, tn = int((acc & ok).sum()), int((acc & ~ok).sum()), int((~acc & ok).sum()), int((~acc & ~ok).sum())
        rows.append({**dict(zip(by, key)), "n": len(g), "accuracy": (tp + tn) / len(g),
                     "precision": tp / (tp + fp) if tp + fp else math.nan, "recall": tp / (tp + fn) if tp + fn else math.nan,
                     "false_accept_rate": fp / (fp + tn) if fp + tn else math.nan, "tp": tp, "fp": fp, "fn": fn, "tn": tn})
    return pd.DataFrame(rows)


def variant_speedups(df: pd.DataFrame) -> pd.DataFrame:
    """robust-kbench's generalisation figure: each trusted candidate's kernel speedup on every shape
    variant beside the default's. Needs per-variant timings (a ``variant_speedups`` map column) of
    kernel-timed rows (:func:`kbench_lib.scoring.metrics.kernel_timed`): CPU and interpreter times are left
    out, as are rows at SMALL size."""
    if len(df) and not metrics.kernel_timed(df).any():
        raise NoData("no data for per-variant speedups: no record is kernel-timed (CPU and interpreter times are no kernel "
                     "speedups; a run without a GPU times no kernel)")
    require(df, ["variant_speedups"], "per-variant speedups",
            "per-variant timings are recorded only by judgements with --time-variants "
            "(time_variants in notebook 01); without it the judge times the default configuration only")
    d = df[metrics.trusted(df) & df["variant_speedups"].notna()]
    if not len(d):
        raise NoData("no data for per-variant speedups: no trusted record holds one")
    d = d.assign(_default=metrics.kernel_speedup(d, "eager"))[metrics.kernel_timed(d)]
    rows = []
    for r in d.to_dict("records"):
        items = r["variant_speedups"].items() if isinstance(r["variant_speedups"], dict) else r["variant_speedups"]
        for name, s in items:
            rows.append({"model": r["model"], **({"device_name": r["device_name"]} if "device_name" in r else {}), "problem": r["problem"],
                         "variant": name, "speedup": s, "default_speedup": r["_default"]})
    if not rows:
        raise NoData("no data for per-variant speedups: no trusted kernel-timed record holds one (CPU and interpreter times are no "
                     "kernel speedups; a run without a GPU times no kernel)")
    return pd.DataFrame(rows)


@lru_cache(maxsize=4)
def problem_tasks(index: str = str(INDEX)) -> dict:
    """{problem key: "forward" | "backward"} from ``problems/index.csv``."""
    try:
        t = pd.read_csv(index, usecols=["problem", "task"])
    except (OSError, ValueError):
        return {}
    return dict(zip(t["problem"], t["task"]))


def forward_backward(records: pd.DataFrame, baselines: pd.DataFrame | None = None) -> pd.DataFrame:
    """Speedups over eager by task (forward, backward): each model's trusted kernel-timed records
    (geometric mean), and torch.compile from the baselines (eager time over compiled time).
    Columns: what, task, n, geomean_speedup, median_speedup."""
    tasks = problem_tasks()
    rows = []
    if len(records) and metrics.kernel_timed(records).any():
        r = records.assign(task=records["problem"].map(tasks).fillna("forward"), _s=metrics.kernel_speedup(records, "eager"))
        r = r[metrics.trusted(r) & r["_s"].notna() & (r["_s"] > 0)]
        for (model, task), g in r.groupby(["model", "task"]):
            rows.append({"what": model, "task": task, "n": len(g), "geomean_speedup": float(np.exp(np.log(g["_s"]).mean())),
                         "median_speedup": float(g["_s"].median())})
    if baselines is not None and len(baselines) and {"mode", "runtime_ms"} <= set(baselines):
        b = baselines[baselines["failure"].isna()] if "failure" in baselines else baselines
        wide = b.pivot_table(index=["problem", "device_name"], columns="mode", values="runtime_ms", aggfunc="last").reset_index()
        if {"eager", "compile"} <= set(wide):
            wide["task"] = wide["problem"].map(tasks).fillna("forward")
            wide["_s"] = (wide["eager"] / wide["compile"]).astype(float)
            for (device, task), g in wide.dropna(subset=["_s"]).groupby(["device_name", "task"]):
                rows.append({"what": f"torch.compile baseline ({device})", "task": task, "n": len(g),
                             "geomean_speedup": float(np.exp(np.log(g["_s"]).mean())), "median_speedup": float(g["_s"].median())})
    if not rows:
        raise NoData("no data for forward against backward: no kernel-timed records and no eager/compile baselines")
    return pd.DataFrame(rows)


def has(df: pd.DataFrame, column: str) -> bool:
    return present(df, column)
