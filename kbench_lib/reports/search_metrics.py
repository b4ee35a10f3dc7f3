"""Metrics of search strategies over record rows: pass@k and fast_p@k, test-time scaling, verifiers.

- :func:`pass_at_k` / :func:`fast_p_at_k`: the unbiased estimator of Chen et al. (2021, HumanEval):
  with ``n`` samples of a problem of which ``c`` succeed, the chance that at least one of ``k``
  drawn without replacement succeeds is ``1 - C(n-c, k) / C(n, k)``; averaged over problems. A
  success for fast_p@k is a trusted row (correct, unflagged) whose kernel speedup exceeds ``p``
  (:func:`kbench_lib.scoring.metrics.kernel_speedup`: only GPU kernel timings count; NaN without any).
- :func:`scaling`: the best result found so far against the search's cost, per problem and over
  problems: proposals made, candidates judged, GPU (judge) seconds spent.
- :func:`seed_gain`: for a search from a seed (the offline tuner's), the seed's runtime over the
  best runtime found so far, per problem and proposal.
- :func:`verifier_confusion`: every verifier decision against the judge's verdict where both
  exist (runs that asked for ground truth), with precision, recall and judge time saved.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..scoring.metrics import attempts, kernel_speedup, kernel_timed, trusted

# the judge's failure categories each verifier predicts (any failure counts for "any")
VERIFIER_TARGETS = {
    "compile": ("compile_error", "load_error"),
    "memory": ("oom", "crash", "runtime_error", "timeout"),
    "numerics": ("output_mismatch", "nonfinite", "shape_mismatch", "dtype_mismatch", "input_mutated"),
}


def estimate_pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass@k from ``n`` samples with ``c`` successes (needs n >= k)."""
    if k <= 0 or n < k:
        raise ValueError(f"pass@k needs 0 < k <= n samples (k={k}, n={n})")
    if n - c < k:
        return 1.0
    # 1 - prod_{i=n-c+1}^{n} (1 - k/i): numerically stable form of 1 - C(n-c,k)/C(n,k)
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def _per_problem(df: pd.DataFrame, success: pd.Series, k: int, by=("model",)) -> pd.DataFrame:
    d = df.assign(_ok=success.astype(bool).to_numpy())
    rows = []
    for key, g in d.groupby([*by, "problem"], dropna=False):
        n, c = len(g), int(g["_ok"].sum())
        rows.append({**dict(zip([*by, "problem"], key if isinstance(key, tuple) else (key,))), "n": n, "c": c,
                     f"at_{k}": estimate_pass_at_k(n, c, k) if n >= k else math.nan})
    return pd.DataFrame(rows)


def pass_at_k(df: pd.DataFrame, k: int, by=("model",)) -> pd.DataFrame:
    """pass@k per group (trusted = pass), from each problem's attempts taken as its n samples
    (``metrics.attempts``: a refine chain is one sample, its best turn; an evolve search one, its
    best proposal: the estimator assumes samples drawn alike, which turns of one chain are not);
    problems with fewer than k samples are left out (``problems_short`` counts them)."""
    df = attempts(df)
    return _aggregate(_per_problem(df, trusted(df), k, by), k, by, "pass")


def fast_p_at_k(df: pd.DataFrame, p: float, k: int, against: str = "eager", by=("model",)) -> pd.DataFrame:
    """fast_p@k per group: the chance that one of k samples is trusted and faster than p times the
    baseline. p <= 0 is pass@k. NaN for groups without any kernel timing (p > 0). Samples are
    attempts, as for :func:`pass_at_k`."""
    if p <= 0:
        return pass_at_k(df, k, by).rename(columns={f"pass@{k}": f"fast_{p:g}@{k}"})
    df = attempts(df, against)
    speed = kernel_speedup(df, against)
    out = _aggregate(_per_problem(df, trusted(df) & speed.notna() & (speed > p), k, by), k, by, f"fast_{p:g}")
    timed = df.assign(_t=kernel_timed(df)).groupby(list(by), dropna=False)["_t"].any()
    if len(out):
        has = out.set_index(list(by)).index.map(lambda key: bool(timed.get(key, False)))
        out.loc[~np.asarray(has, dtype=bool), f"fast_{p:g}@{k}"] = math.nan
    return out


def _aggregate(per: pd.DataFrame, k: int, by, name: str) -> pd.DataFrame:
    if not len(per):
        return pd.DataFrame(columns=[*by, f"{name}@{k}", "problems", "problems_short"])
    rows = []
    for key, g in per.groupby(list(by), dropna=False):
        ok = g[f"at_{k}"].dropna()
        rows.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))), f"{name}@{k}": float(ok.mean()) if len(ok) else math.nan,
                     "problems": int(len(ok)), "problems_short": int(g[f"at_{k}"].isna().sum())})
    return pd.DataFrame(rows)


def _order(df: pd.DataFrame) -> pd.DataFrame:
    """Rows in the order the search made them: by proposal number, else turn and sample."""
    d = df.copy()
    d["_order"] = d["proposal"].astype("float") if "proposal" in d and d["proposal"].notna().any() else np.nan
    d["_order"] = d["_order"].fillna(d["turn"].fillna(0).astype(float) * 1e6 + d["sample"].fillna(0).astype(float))
    return d.sort_values(["_order", "timestamp"] if "timestamp" in d else ["_order"], kind="stable")


def _score(df: pd.DataFrame, against: str) -> pd.Series:
    """The speedup a scaling curve reports: trusted rows' kernel speedups
    (:func:`kbench_lib.scoring.metrics.kernel_speedup`), NaN otherwise. A CPU clock or Triton's interpreter
    is no kernel speedup (a search on the CPU still ranks by its own clock; that is not reported)."""
    return kernel_speedup(df, against).where(trusted(df))


def scaling(df: pd.DataFrame, against: str = "eager", by=("model", "strategy")) -> pd.DataFrame:
    """Per (group, problem) and proposal: proposals made, candidates judged and judge seconds spent
    so far, and the best trusted kernel speedup found so far (NaN until one is found; NaN throughout
    without kernel timings: CPU and interpreter clocks are no speedups). ``kernel_timing`` says
    whether the row's timings are GPU kernel timings (:func:`kbench_lib.scoring.metrics.timing_kind`)."""
    if not len(df):
        return pd.DataFrame(columns=[*by, "problem", "proposals", "judged", "gpu_s", "best_speedup", "found", "kernel_timing"])
    parts = []
    for key, g in df.groupby([*by, "problem"], dropna=False):
        g = _order(g)
        judged = g["judged"].astype("boolean").fillna(True).astype(bool) if "judged" in g else pd.Series(True, index=g.index)
        seconds = g["judge_s"].astype(float).fillna(0.0).where(judged, 0.0)
        best = _score(g, against).cummax().ffill()
        part = pd.DataFrame({"proposals": np.arange(1, len(g) + 1), "judged": judged.cumsum().to_numpy(),
                             "gpu_s": seconds.cumsum().to_numpy(), "best_speedup": best.to_numpy(),
                             "found": trusted(g).cummax().to_numpy(), "kernel_timing": kernel_timed(g).to_numpy()})
        for name, value in zip([*by, "problem"], key if isinstance(key, tuple) else (key,)):
            part[name] = value
        parts.append(part)
    return pd.concat(parts, ignore_index=True)[[*by, "problem", "proposals", "judged", "gpu_s", "best_speedup", "found", "kernel_timing"]]


def scaling_summary(curve: pd.DataFrame, p: float = 1.0, by=("model", "strategy")) -> pd.DataFrame:
    """Over problems, at each proposal count: the geometric mean of the best speedup so far
    (problems without a trusted result yet count as NaN and are left out), the share of problems
    with a trusted result (fast_0) and with a best kernel speedup over ``p`` (fast_p), both over every problem
    of the group, solved or not, mean candidates
    judged and judge seconds. A problem whose search stopped early keeps its last values. Speedups
    are kernel timings only (:func:`scaling`): a group without any has NaN fast_p and geomean
    (not measured), not a CPU or interpreter clock's ratio."""
    if not len(curve):
        return pd.DataFrame()
    rows = []
    for key, g in curve.groupby(list(by), dropna=False):
        wide = g.pivot_table(index="proposals", columns="problem", values=["best_speedup", "found", "judged", "gpu_s"], aggfunc="last",
                              dropna=False)  # keep a problem never solved (best_speedup all NaN): it counts in fast_p
        wide = wide.ffill()
        timed = bool(g["kernel_timing"].astype(bool).any()) if "kernel_timing" in g else bool(g["best_speedup"].notna().any())
        best = wide["best_speedup"]
        found = wide["found"].astype(float).fillna(0.0)
        logs = np.log(best.where(best > 0))
        out = pd.DataFrame({
            "proposals": wide.index,
            "geomean_best_speedup": np.exp(logs.mean(axis=1, skipna=True)).to_numpy(),
            "fast_0": found.mean(axis=1).to_numpy(),
            f"fast_{p:g}": (best > p).astype(float).mean(axis=1).to_numpy() if timed else np.nan,
            "judged": wide["judged"].mean(axis=1).to_numpy(),
            "gpu_s": wide["gpu_s"].sum(axis=1).to_numpy(),
        })
        for name, value in zip(by, key if isinstance(key, tuple) else (key,)):
            out[name] = value
        rows.append(out)
    return pd.concat(rows, ignore_index=True)


def seed_gain(df: pd.DataFrame, by=("model", "strategy")) -> pd.DataFrame:
    """Per (group, problem) and proposal, for searches whose first proposal is their seed (the
    offline tuner's shipped solution): the seed's runtime divided by the best trusted runtime found
    so far (``gain``; 1.0 until something faster is found, NaN when the seed itself is not trusted),
    and the proposals, candidates judged and judge seconds so far. Runtimes, not speedups over
    eager: the eager baseline is timed again in each judgement and would add its own noise."""
    cols = [*by, "problem", "proposals", "judged", "gpu_s", "gain"]
    if not len(df):
        return pd.DataFrame(columns=cols)
    parts = []
    for key, g in df.groupby([*by, "problem"], dropna=False):
        g = _order(g)
        ok = trusted(g) & g["runtime_ms"].notna() & kernel_timed(g)
        runtime = g["runtime_ms"].astype(float).where(ok)
        seed_ms = runtime.iloc[0]
        judged = g["judged"].astype("boolean").fillna(True).astype(bool) if "judged" in g else pd.Series(True, index=g.index)
        part = pd.DataFrame({"proposals": np.arange(1, len(g) + 1), "judged": judged.cumsum().to_numpy(),
                             "gpu_s": g["judge_s"].astype(float).fillna(0.0).where(judged, 0.0).cumsum().to_numpy(),
                             "gain": (seed_ms / runtime.cummin().ffill()).to_numpy()})
        for name, value in zip([*by, "problem"], key if isinstance(key, tuple) else (key,)):
            part[name] = value
        parts.append(part)
    return pd.concat(parts, ignore_index=True)[cols]


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


DECISION_COLUMNS = ["verifier", "predicted_fail", "judged", "failure", "judge_s", "problem"]


def decisions(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (record, verifier) decision, plus ``any`` (rejected when any verifier rejected
    the row): the verifier, whether it predicted a failure, whether the judge ran the candidate
    and, if so, its failure category (None: it passed) and judge seconds."""
    out = []
    if "verify_decisions" not in df:
        return pd.DataFrame(columns=DECISION_COLUMNS)
    for _, r in df.iterrows():
        found = r["verify_decisions"]
        if _is_missing(found):
            continue
        found = dict(found.items() if isinstance(found, dict) else list(found))
        if not found:
            continue
        judged = True if _is_missing(r.get("judged")) else bool(r.get("judged"))
        base = {"judged": judged, "failure": r["failure"] if judged else None, "judge_s": r.get("judge_s"), "problem": r["problem"]}
        out += [{"verifier": name, "predicted_fail": decision == "fail", **base} for name, decision in found.items()]
        out.append({"verifier": "any", "predicted_fail": any(v == "fail" for v in found.values()), **base})
    return pd.DataFrame(out, columns=DECISION_COLUMNS)


def verifier_confusion(df: pd.DataFrame) -> pd.DataFrame:
    """Per verifier (and ``any``), against the judge on the rows it judged: true/false positives
    and negatives (positive = predicted to fail), precision and recall for any failure and for the
    verifier's own categories (:data:`VERIFIER_TARGETS`), and the judge seconds its rejections
    saved (``saved_s``: measured where the run asked for ground truth, else the problem's mean
    judge time over its judged rows)."""
    d = decisions(df)
    if not len(d):
        return pd.DataFrame()
    judged_rows = df["judged"].astype("boolean").fillna(True).astype(bool) if "judged" in df else pd.Series(True, index=df.index)
    mean_s = df[judged_rows].groupby("problem")["judge_s"].mean()
    rows = []
    for name, g in d.groupby("verifier", sort=False):
        known = g[g["judged"]]
        actual = known["failure"].notna()
        pred = known["predicted_fail"].astype(bool)
        tp, fp = int((pred & actual).sum()), int((pred & ~actual).sum())
        fn, tn = int((~pred & actual).sum()), int((~pred & ~actual).sum())
        row = {"verifier": name, "decisions": len(g), "with_ground_truth": len(known), "rejected": int(g["predicted_fail"].sum()),
               "tp": tp, "fp": fp, "fn": fn, "tn": tn,
               "precision": tp / (tp + fp) if tp + fp else math.nan, "recall": tp / (tp + fn) if tp + fn else math.nan}
        own = known["failure"].isin(VERIFIER_TARGETS.get(name, ()))
        row["precision_own"] = int((pred & own).sum()) / int(pred.sum()) if name in VERIFIER_TARGETS and int(pred.sum()) else math.nan
        row["recall_own"] = int((pred & own).sum()) / int(own.sum()) if name in VERIFIER_TARGETS and int(own.sum()) else math.nan
        rejected = g[g["predicted_fail"].astype(bool)]
        measured = rejected["judge_s"].astype(float).where(rejected["judged"])
        row["saved_s"] = float(measured.fillna(rejected["problem"].map(mean_s)).fillna(0.0).sum())
        rows.append(row)
    return pd.DataFrame(rows)
