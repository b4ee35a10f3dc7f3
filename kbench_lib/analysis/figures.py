"""Every figure and table of the analyses, written per device under one folder; what the notebooks
show and what ``make figures`` (``python -m kbench_lib.analysis.figures``) regenerates under
``results/figures/`` from the committed records and baselines.

Each ``*_figures`` function returns {name: [paths]}; a figure with no data is skipped with its
:class:`.data.NoData` message printed (so a notebook says plainly which sections are empty).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..scoring import metrics
from ..reports import plots
from ..core import provenance
from .. import workflows
from ..generation.models import is_control
from . import charts, failures, fusion, results, scaling, style, tables
from .data import NoData

RESULTS_STATS = ("correct", "fast_0", "fast_1", "fast_1.5", "fast_2", "geomean_eager", "geomean_compile", "sol_fraction")


def slug(name: str) -> str:
    return provenance.slug(str(name)) or "unknown-device"


def _draw(made: dict, name: str, out: Path, draw) -> None:
    try:
        fig = draw()
    except (NoData, plots.NoKernelTimings) as e:
        print(f"{name}: not drawn, {e}")
        return
    made[name] = style.save(fig, out / name)


def _table(made: dict, name: str, out: Path, make, **kw) -> pd.DataFrame | None:
    try:
        t = make()
    except NoData as e:
        print(f"{name}: no table, {e}")
        return None
    if t is None or not len(t):
        print(f"{name}: no table, no rows")
        return None
    made[name] = tables.export(t, out / name, **kw)
    return t


def by_device(df: pd.DataFrame):
    """(device slug, rows) for each device in the records (``device_name``; CPU runs by their CPU)."""
    if not len(df):
        return []
    names = df["device_name"].fillna(df.get("device", "unknown")).astype(str)
    return [(slug(name), df[names == name]) for name in sorted(names.unique())]


def per_device(df: pd.DataFrame, make, out_dir) -> dict:
    """``make(rows, folder)`` for each device's rows, into ``out_dir/<device>`` (a notebook's
    sections); {"<device>/<name>": paths}."""
    made: dict = {}
    for dev, d in by_device(df):
        print(f"== {dev}")
        made.update({f"{dev}/{k}": v for k, v in make(d, Path(out_dir) / dev).items()})
    return made


def results_figures(df: pd.DataFrame, baselines: pd.DataFrame, out_dir, n_boot: int = results.N_BOOT) -> dict:
    """Per device: the results table (CSV, LaTeX), fast_p curves and table, geometric-mean speedups
    over eager and torch.compile, correctness, the same verdicts under each protocol (table and
    figure), fraction of the speed of light."""
    made: dict = {}
    for dev, d in by_device(df):
        out = Path(out_dir) / dev
        here: dict = {}
        control = d["model"].map(is_control)
        if control.any():  # the clock control apart: a flagged model whose speedups measure the clock, not a kernel
            _table(here, "clock_control", out, lambda: results.clock_control(d).round(3),
                   caption=f"The eager clock control per level ({plots.provenance(d[control])}): median speedup over eager "
                           "(1.0 for an unbiased clock) and the share within 0.95-1.05")
            d = d[~control]
        if not len(d):
            made.update({f"{dev}/{k}": v for k, v in here.items()})
            continue
        table = results.results_table(d, by=("model", "level"), n_boot=n_boot)
        cols = [c for c in table.columns if not any(c.startswith(f"fast_{p:g}") for p in results.PS if f"fast_{p:g}" not in RESULTS_STATS)]
        _table(here, "results", out, lambda: table[cols], caption=f"Results per model and level ({plots.provenance(d)}); "
               "95% bootstrap intervals over problems", stats=RESULTS_STATS)
        curve = results.fast_p_curve(d, by=("model", "level"), n_boot=min(n_boot, 300))
        _table(here, "fast_p", out, lambda: results.fast_p_wide(curve), caption=f"fast_p by threshold p ({plots.provenance(d)})")
        _draw(here, "fast_p_curve", out, lambda: charts.fast_p_curves(curve, df=d))
        _draw(here, "correctness", out, lambda: charts.stat_bars(table, "correct", "share correct", df=d, title="Correct candidates"))
        _draw(here, "geomean_eager", out, lambda: charts.stat_bars(table, "geomean_eager", "speedup over eager", log=True, ref=1.0, df=d,
                                                                    title="Geometric-mean speedup over eager PyTorch"))
        _draw(here, "geomean_compile", out, lambda: charts.stat_bars(table, "geomean_compile", "speedup over torch.compile", log=True, ref=1.0,
                                                                      df=d, title="Geometric-mean speedup over torch.compile"))
        # the same verdicts read under kbench, kernelbench and kernelbench-v0 (docs/PROTOCOLS.md)
        _table(here, "protocol_summary", out, lambda: metrics.protocol_summary(d, by=("model",)).round(3),
               caption=f"fast_p and correctness per model under each protocol ({plots.provenance(d)})")
        _draw(here, "protocols", out, lambda: plots.protocol_plot(d))
        b = baselines[baselines["device_name"].astype(str).map(slug) == dev] if len(baselines) else baselines
        sol = workflows.sol_fractions(d, b)
        if sol and metrics.kernel_timed(d).any():
            here["sol_fraction"] = style.save(plots.sol_fraction_plot(sol), out / "sol_fraction")
        else:
            print("sol_fraction: not drawn, no data: no kernel-timed records on this device")
        made.update({f"{dev}/{k}": v for k, v in here.items()})
    return made


def failure_figures(df: pd.DataFrame, out_dir) -> dict:
    """The failure taxonomy: stages by level and by model, classes with an example, threat classes."""
    made: dict = {}
    if not len(df):
        print("failures: no records")
        return made
    tax = failures.taxonomy(df)
    out = Path(out_dir)
    stage_colors = {"generation": "#999999", "verifier": "#BBBBBB", "build": style.OKABE_ITO[3], "load": "#CC79A7", "run": "#0072B2",
                    "correctness": "#56B4E9", "judge": "#000000", "strategy": "#666666", "flagged": style.OUTCOME["flagged"],
                    "trusted": style.OUTCOME["trusted"]}
    for by in ("level", "model"):
        _draw(made, f"stages_by_{by}", out, lambda by=by: charts.stacked_shares(failures.breakdown(tax, by, "stage"), f"Where candidates fail, by {by}",
                                                                             df, colors=stage_colors))
    _table(made, "failure_classes", out, lambda: failures.classes(tax), caption="Failure classes (from the compiler's and the judge's messages)")
    _table(made, "failures_by_tag", out, lambda: failures.breakdown(tax[tax["outcome"] != "trusted"], "tag", "outcome").reset_index(),
           caption="Untrusted candidates by problem tag and outcome")
    _table(made, "threats", out, lambda: failures.threats(tax), caption="Flags by threat class (docs/THREAT_MODEL.md)")
    return made


def fusion_figures(df: pd.DataFrame, out_dir) -> dict:
    """Kernel counts, fusion decisions against torch.compile, operators per fused kernel, slower-than-eager."""
    made: dict = {}
    out = Path(out_dir)
    _draw(made, "kernel_counts", out, lambda: charts.kernel_counts_plot(fusion.kernel_counts(df), df))
    try:
        table = fusion.fusion_table(df)
    except NoData as e:
        print(f"fusion decisions: {e}")
        table = None
    if table is not None:
        _table(made, "fusion_decisions", out, lambda: table.drop(columns=[c for c in ("source", "run_id", "timestamp") if c in table]),
               caption="Reference operators taken into own kernels or left in the library, per candidate")
        _draw(made, "fusion_shares", out, lambda: charts.fusion_shares(table, df=df))
        _table(made, "fusion_vs_compile", out, lambda: fusion.against_compile(table)[
            ["model", "problem", "sample", "outcome", "replaced", "in_library", "compile_replaced", "compile_in_library",
             "only_candidate_fused", "only_compile_fused"]], caption="Fusion decisions against torch.compile's for the same problem")
    _draw(made, "ops_per_kernel", out, lambda: charts.ops_per_kernel_hist(fusion.ops_per_kernel(df), df))
    _table(made, "slower_than_eager", out, lambda: fusion.slower_than_eager(df), caption="Trusted candidates slower than eager PyTorch")
    return made


def scaling_figures(df: pd.DataFrame, baselines: pd.DataFrame, out_dir) -> dict:
    """Best-of-k, refinement turns, evolutionary progress, verifier accuracy, variants, forward/backward."""
    made: dict = {}
    out = Path(out_dir)
    for name, make, x, y in (("best_of_k", lambda: scaling.best_of_k(df), "k", "fast_p"),
                             ("refinement", lambda: scaling.refinement_curve(df), "turn", "fast_p"),
                             ("evolution", lambda: scaling.evolution_progress(df), "generation", "solved")):
        t = _table(made, name, out, make, caption=name.replace("_", " "))
        if t is not None and name == "evolution" and t["best_speedup_geomean"].notna().any():
            y = "best_speedup_geomean"  # with kernel timings, what the search gained; else the share solved
        if t is not None:
            _draw(made, f"{name}_curve", out, lambda t=t, x=x, y=y, name=name: charts.lines(t, x, y, name.replace("_", " ").capitalize(), df=df))
    _table(made, "verifier_accuracy", out, lambda: scaling.verifier_accuracy(df), caption="Verifier decisions against the judge's")
    t = _table(made, "variant_speedups", out, lambda: scaling.variant_speedups(df), caption="Speedups per shape variant")
    timed = df[metrics.kernel_timed(df)] if len(df) else df  # CPU and interpreter times are no kernel speedups
    _draw(made, "variant_speedups_scatter", out, lambda: charts.variant_speedups_plot(scaling.variant_speedups(timed), df))
    _table(made, "forward_backward", out, lambda: scaling.forward_backward(df, baselines), caption="Speedups over eager by task")
    return made


def committed_all(out_dir=None, n_boot: int = results.N_BOOT) -> dict:
    """Every analysis figure and table of the committed records and baselines (``make figures``)."""
    from ..scoring import committed

    out = Path(out_dir or committed.RESULTS / "figures")
    records, _ = committed.records()
    baselines = committed.baselines()
    made = {}
    made.update(workflows.committed_figures(records, baselines, out))
    made.update(results_figures(records, baselines, out, n_boot=n_boot))
    for dev, d in by_device(records):
        b = baselines[baselines["device_name"].astype(str).map(slug) == dev]
        for name, fn in (("failures", lambda: failure_figures(d, out / dev / "failures")),
                         ("fusion", lambda: fusion_figures(d, out / dev / "fusion")),
                         ("scaling", lambda: scaling_figures(d, b, out / dev / "scaling"))):
            made.update({f"{dev}/{name}/{k}": v for k, v in fn().items()})
    return made


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description="Regenerate every figure and table of results/ from the committed records and baselines.")
    ap.add_argument("--out", default=None, help="folder (default results/figures)")
    ap.add_argument("--n-boot", type=int, default=results.N_BOOT)
    args = ap.parse_args()
    made = committed_all(args.out, args.n_boot)
    print(f"{sum(len(v) for v in made.values())} files, {len(made)} figures and tables")
    for name, paths in sorted(made.items()):
        print(f"  {name}: {', '.join(str(p) for p in paths)}")


if __name__ == "__main__":
    main()


def show(made: dict, scale: float = 0.5) -> None:
    """In a notebook: each figure's saved PNG (the file a paper would use) and each table's files."""
    figs = {k: v for k, v in made.items() if any(p.suffix == ".png" for p in v)}
    for name, paths in made.items():
        if name not in figs:
            print(f"{name}: {', '.join(str(p) for p in paths)}")
    workflows.show(figs, scale)
