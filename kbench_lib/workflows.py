"""What the notebooks call: each function one step of a notebook, so cells hold no logic."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .scoring import metrics, protocols
from .reports import plots
from .judging.pipeline import JudgeOptions
from .measure.trials import BUDGET_S
from .generation.models import get_model, is_control
from .suite.problems import Problem, discover_with_errors
from .core import dsl_packages
from .core.provenance import resolve_device
from .core.provenance import slug as device_slug_of
from .scoring.records import display_name, read_records
from .batch.runner import RUNS_ROOT, new_run_id, run_batch

REPO = Path(__file__).resolve().parent.parent
# the DSL backends (cute, tilelang) compile for CUDA GPUs only (kbench_lib/core/dsl_packages.py)
BACKENDS_ON = {"cpu": ("cpp", "triton", "torch"), "cuda": ("cuda", "triton", "cpp", "cute", "tilelang", "torch")}


def _backends_on(device: str) -> tuple[str, ...]:
    return BACKENDS_ON["cuda" if device.startswith("cuda") else "cpu"]


def runnable_backends(device: str) -> tuple[str, ...]:
    """The backends ``device`` can judge here: a DSL backend only where its package is installed
    (the ``dsl`` extra)."""
    return tuple(b for b in _backends_on(device) if not dsl_packages.is_dsl(b) or dsl_packages.installed(b))


def _why_skipped(backend: str, device: str) -> str:
    if backend in _backends_on(device) and dsl_packages.is_dsl(backend):
        return f"needs {dsl_packages.INSTALL}"
    return f"cannot run on {device}"


def plan(problems_dir, model: str, device: str, levels=None, limit: int | None = None) -> tuple[list[Problem], list[tuple[str, str]]]:
    """One pass over the problems under ``problems_dir`` (in ``levels``): those for which ``model``
    has a candidate ``device`` can run (the first ``limit``; all when limit is None or 0), and the
    (problem, backend) of candidates it cannot run (CUDA kernels on a machine without a GPU), which
    are reported as skipped, never silently dropped."""
    problems, _ = discover_with_errors(problems_dir or REPO / "problems")
    if levels:
        problems = [p for p in problems if p.level in levels]
    can = set(runnable_backends(device))
    generate = get_model(model)
    chosen, skipped = [], []
    for p in problems:
        try:
            samples = generate(p)
        except Exception:  # noqa: BLE001 - a model that fails here fails again, recorded, in run_batch
            chosen.append(p)
            continue
        backends = [s.candidate.backend for s in samples if s.candidate is not None]
        if any(b in can for b in backends):
            chosen.append(p)
        skipped += [(p.key, b) for b in backends if b not in can]
    return (chosen[:limit] if limit else chosen), skipped


def select_problems(problems_dir, model: str, device: str, levels=None, limit: int | None = None) -> list[Problem]:
    """Problems for which ``model`` has a candidate that can run on ``device`` (see :func:`plan`)."""
    return plan(problems_dir, model, device, levels, limit)[0]


def unrunnable(problems_dir, model: str, device: str, levels=None) -> list[tuple[str, str]]:
    """(problem, backend) of ``model``'s candidates that ``device`` cannot run (see :func:`plan`)."""
    return plan(problems_dir, model, device, levels)[1]


def evaluate(
    models: dict,
    problems_dir=None,
    device: str = "auto",
    levels=None,
    run_id: str | None = None,
    runs_root=None,
    small: bool | None = None,
    precision: str = "fp32",
    seeds: int = 5,
    timing_budget_s: float = BUDGET_S,
    compile_baseline: bool = False,
    ray: str | bool | None = None,
    time_variants: bool = False,
    protocol: str = "kbench",
) -> tuple[str, pd.DataFrame]:
    """Judge every model's candidates (``models`` maps a model name to a problem limit, 0 = all)
    and return the run's records. ``ray``: judge on a Ray cluster (True, "auto" or an address;
    docs/CLUSTER.md); then ``device`` "auto" is the cluster's (its GPUs, else the CPU), not this machine's.
    ``time_variants``: also time every variant (per-variant speedups in ``variant_speedups``).
    ``protocol``: which configurations at which tolerance decide ``correct`` (docs/PROTOCOLS.md);
    every configuration is recorded whatever it is, so the records read under any protocol."""
    device = _batch_device(device, ray)
    run_id = run_id or new_run_id()
    root = Path(runs_root or RUNS_ROOT)
    opts = JudgeOptions(device=device, small=small, precision=precision, n_seeds=seeds, timing_budget_s=timing_budget_s,
                        compile_baseline=compile_baseline, time_variants=time_variants, protocol=protocols.check(protocol))
    for model, limit in models.items():
        chosen, skipped = plan(problems_dir, model, device, levels, limit)
        for backend in sorted({b for _, b in skipped}):
            keys = [k for k, b in skipped if b == backend]
            print(f"{model}: {len(keys)} {backend} candidate(s) skipped, their backend {_why_skipped(backend, device)}: "
                  + ", ".join(keys[:8]) + (" ..." if len(keys) > 8 else ""))
        run_batch(chosen, model, run_id=run_id, runs_root=root, opts=opts, backends=runnable_backends(device), ray=ray)
    return run_id, read_records(root, run_id)


def _batch_device(device: str, ray) -> str:
    """``device`` resolved where the batch judges: here, or on the Ray cluster named by ``ray``."""
    if ray is None or ray is False:
        return resolve_device(device)
    from .cluster import cluster_device

    return cluster_device(None if ray is True else ray, device)


def timing_note(df: pd.DataFrame) -> str:
    """Where this run's times come from, in words, and what is left out of speedups because of it."""
    timed = df[df["runtime_ms"].notna()]
    if not len(timed):
        return "No candidate was timed."
    kinds = metrics.timing_kind(timed).value_counts()
    parts = [f"{n} by {metrics.TIMING_KINDS[k]}" for k, n in kinds.items()]
    note = f"{len(timed)} candidates timed: " + "; ".join(parts) + "."
    other = len(timed) - int(kinds.get("gpu", 0))
    if other:
        note += (f" The {other} not timed as GPU kernels at the benchmark's size show correctness, failures and flags"
                 " only: their times are not kernel speedups, so they are left out of fast_p for p > 0, the"
                 " geometric means and the speedup figures (kbench_lib.scoring.metrics.timing_kind).")
        if "proposal_id" in df and df["proposal_id"].notna().any():  # a search's records
            note += (" A search without kernel timings has no speedup to select on: it ranks its trusted candidates"
                     " alike (the earlier first), comparing correctness, not speed.")
    return note


def model_notes(df: pd.DataFrame) -> list[str]:
    """What each model in the rows is for, where that changes how its verdicts read (models.NOTES)."""
    from .generation.models import NOTES

    return [NOTES[m] for m in sorted(df["model"].dropna().unique()) if m in NOTES]


def model_labels(df: pd.DataFrame) -> dict[str, str]:
    """Model names with their role, for figures: ``torch-compile (compiler baseline)``."""
    from .generation.models import ROLES

    return {m: f"{m} ({ROLES[m]})" for m in df["model"].dropna().unique() if m in ROLES}


def verdict_table(df: pd.DataFrame) -> pd.DataFrame:
    """One line per verdict; speedups only where the timing is a kernel timing (``timing`` says
    what the times are)."""
    d = df.assign(timing=metrics.timing_kind(df), speedup_eager=metrics.kernel_speedup(df, "eager"),
                  speedup_compile=metrics.kernel_speedup(df, "compile"))
    cols = ["model", "problem", "backend", "correct", "failure", "flags", "timing", "runtime_ms", "baseline_eager_ms",
            "speedup_eager", "speedup_compile", "max_abs_err"]
    return d[cols].sort_values(["model", "problem"]).reset_index(drop=True)


def failures(df: pd.DataFrame) -> pd.DataFrame:
    bad = df[~metrics.trusted(df)]
    return bad[["model", "problem", "backend", "failure", "flags", "message"]].reset_index(drop=True)


def _save(fig, stem: Path) -> list[Path]:
    """Saves a figure (PDF and PNG) and closes it: notebooks show the saved PNG (:func:`show`)."""
    import matplotlib.pyplot as plt

    try:
        return plots.save(fig, stem)
    finally:
        plt.close(fig)


def _draw(made: dict, name: str, draw, out_dir: Path) -> None:
    """Draws one figure into ``made``; a figure without kernel timings to show is reported, not drawn."""
    try:
        fig = draw()
    except plots.NoKernelTimings as e:
        print(f"{name}: not drawn, {e}")
        return
    made[name] = _save(fig, out_dir / name)


def show(made: dict, scale: float = 0.5) -> None:
    """Displays the saved PNGs of ``made`` ({name: [paths]}) in a notebook, at ``scale`` of their
    pixel size (0.5: 150 dpi, where the style's smallest label reads at about 11 pt:
    :func:`kbench_lib.reports.plots.displayed_label_pt`), each under its name: what is shown is the file a
    paper would use."""
    import struct

    from IPython.display import Image, display

    for name, paths in made.items():
        png = next(p for p in paths if p.suffix == ".png")
        width = struct.unpack(">I", png.read_bytes()[16:20])[0]  # the PNG header's IHDR width
        print(f"{name}: {', '.join(str(p) for p in paths)}")
        display(Image(filename=str(png), width=int(width * scale)))


def figures(df: pd.DataFrame, out_dir) -> dict:
    """Draws and saves the run's figures (PDF and PNG); returns {name: [paths]}. Speedup and fast_p
    figures only from kernel timings (a run without a GPU has outcomes only)."""
    out_dir = Path(out_dir)
    made: dict = {}
    if not len(df):
        return made
    df = df.assign(model=df["model"].map(display_name, na_action="ignore"))  # no temporary folder in a legend
    made["outcomes"] = _save(plots.outcome_bars(df, labels=model_labels(df)), out_dir / "outcomes")
    if "configs" in df and df["configs"].notna().any():  # records that hold every configuration read under each protocol
        made["protocols"] = _save(plots.protocol_plot(df), out_dir / "protocols")
    _draw(made, "speedup_eager", lambda: plots.speedup_plot(df, "eager"), out_dir)
    _draw(made, "fast_p_eager", lambda: plots.fast_p_curve(df, "eager"), out_dir)
    if metrics.kernel_speedup(df, "compile").notna().any():
        _draw(made, "speedup_compile", lambda: plots.speedup_plot(df, "compile"), out_dir)
    return made


def sol_fractions(records: pd.DataFrame, baselines: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Fraction of the speed of light (``sol_ms`` / time) per problem: eager and torch.compile from
    the baselines, each model's trusted kernel-timed candidates from the records."""
    out = []
    if len(baselines) and "sol_ms" in baselines:
        ok = baselines[baselines["failure"].isna() & baselines["sol_ms"].notna() & baselines["runtime_ms"].notna()]
        for mode, name in (("eager", "eager PyTorch"), ("compile", "torch.compile")):
            b = ok[ok["mode"] == mode]
            if len(b):
                out.append((name, b.assign(value=b["sol_ms"] / b["runtime_ms"])))
    if len(records):
        r = records[metrics.trusted(records) & metrics.kernel_timed(records) & records["sol_ms"].notna() & records["runtime_ms"].notna()]
        labels = model_labels(r)
        for model, g in r.groupby("model"):
            out.append((labels.get(model, model), g.assign(value=g["sol_ms"] / g["runtime_ms"])))
    return out


def committed_figures(records: pd.DataFrame, baselines: pd.DataFrame, out_dir) -> dict:
    """The committed results' figures, one folder per device: fast_p per level, speedups over eager
    (and torch.compile where the records have it), torch.compile and CUDA graphs against eager,
    fraction of the speed of light. Returns {"<device>/<name>": [paths]}."""
    made: dict = {}
    devices = sorted(set(records.get("device_name", pd.Series(dtype=str)).dropna()) | set(baselines.get("device_name", pd.Series(dtype=str)).dropna()))
    for device in devices:
        slug = device_slug_of(device)
        r = records[records["device_name"] == device] if len(records) else records
        b = baselines[baselines["device_name"] == device] if len(baselines) else baselines
        out, here = Path(out_dir) / slug, {}
        r = r[~r["model"].map(is_control)] if len(r) else r  # the clock control is not a kernel author: its table is apart
        if len(r):
            # one model's kernels: pooling every model's rows would weigh a tuner's hundreds of proposals
            # against a few hand-written solutions (per model and level: results_figures' fast_p_curve)
            hand = r[r["model"] == "reference"] if (r["model"] == "reference").any() else r
            what = "the hand-written reference solutions" if hand is not r else "the committed kernels"
            _draw(here, "fast_p_by_level", lambda: plots.fast_p_curve(hand, "eager", by="level", title=rf"fast$_p$ of {what}, by level"), out)
            _draw(here, "speedup_eager", lambda: plots.speedup_plot(r, "eager"), out)
            if metrics.kernel_speedup(r, "compile").notna().any():
                _draw(here, "speedup_compile", lambda: plots.speedup_plot(r, "compile"), out)
        if len(b):
            here["baselines_vs_eager"] = _save(plots.baseline_speedup_plot(b), out / "baselines_vs_eager")
        sol = sol_fractions(r, b)
        if sol:
            here["sol_fraction"] = _save(plots.sol_fraction_plot(sol), out / "sol_fraction")
        made.update({f"{slug}/{k}": v for k, v in here.items()})
    return made


def measure_baselines(problems_dir=None, modes=("eager", "compile", "cudagraph"), device: str = "auto", levels=None,
                      limit: int | None = None, small: bool | None = None, root=None, budget_s: float = 5.0):
    """Run (or resume) a baseline sweep and return its rows. ``root``: a folder (one per device below
    it); None or "" for ``<runs root>/baselines`` (results/runs/baselines, or under
    ``$KBENCH_RUNS_ROOT``); "committed" for results/baselines/, the committed sweeps."""
    from .judging.baselines import sweep
    from .suite.baselines_store import _table

    problems, _ = discover_with_errors(problems_dir or REPO / "problems")
    if levels:
        problems = [p for p in problems if p.level in levels]
    problems = problems[:limit] if limit else problems
    root = None if root == "committed" else (root or Path(RUNS_ROOT) / "baselines")
    folder = sweep(problems, modes, device, small=small, root=root, budget_s=budget_s)
    _table.cache_clear()
    return _table(str(folder))


def suite_sizes(problems_dir=None) -> dict[str, int]:
    """Problems per level in the suite (so a summary of part of it can say how large a part)."""
    from collections import Counter

    problems, _ = discover_with_errors(problems_dir or REPO / "problems")
    return dict(Counter(p.level for p in problems))


def baseline_summary(df: pd.DataFrame, suite: dict[str, int] | None = None) -> pd.DataFrame:
    """Per level: problems measured (and, given ``suite``, how many the level has), rows that
    succeeded per mode, median eager/compile and eager/cudagraph time ratios, median eager time
    over the speed-of-light bound. Medians are over the problems measured in both modes."""
    wide = df.pivot_table(index=["level", "problem"], columns="mode", values="runtime_ms", aggfunc="last")
    rows = []
    for level, g in wide.groupby(level="level"):
        row = {"level": level, "problems": len(g)}
        if suite is not None:
            row["in_suite"] = suite.get(level)
        for mode in ("eager", "compile", "cudagraph"):
            row[f"{mode}_ok"] = int(g[mode].notna().sum()) if mode in g else 0
        if "compile" in g:
            row["median_eager_over_compile"] = float((g["eager"] / g["compile"]).median())
        if "cudagraph" in g:
            row["median_eager_over_cudagraph"] = float((g["eager"] / g["cudagraph"]).median())
        if "sol_ms" in df:
            sol = df[df["mode"] == "eager"].set_index(["level", "problem"])["sol_ms"]
            row["median_eager_over_sol"] = float((g["eager"] / sol.reindex(g.index)).median())
        rows.append(row)
    return pd.DataFrame(rows)


def baseline_summaries(baselines: pd.DataFrame, suite: dict[str, int] | None = None) -> pd.DataFrame:
    """:func:`baseline_summary` for each device in the rows, one block per device."""
    parts = [baseline_summary(g, suite).assign(device_name=device) for device, g in baselines.groupby("device_name")]
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    return out[["device_name", *[c for c in out if c != "device_name"]]]


def audit(corpus_spec: str, device: str = "auto", run_id: str | None = None, runs_root=None, protocol: str = "cuda-l1",
          timing_budget_s: float = BUDGET_S, limit: int | None = None, filters=None, build_jobs: int | None = None,
          progress: bool = True) -> tuple[str, pd.DataFrame, float]:
    """Judge a published corpus (``cuda-l1:PATH``: :mod:`kbench_lib.generation.corpus`) once, under
    its own protocol (every record reads under kbench's too), and return (run id, the run's
    records, the wall seconds of this call). The same ``run_id`` resumes a batch cut short."""
    import time

    from .generation.corpus import corpus_problems
    from .suite.problems import select

    started = time.monotonic()
    device = resolve_device(device)
    run_id = run_id or new_run_id("audit")
    root = Path(runs_root or RUNS_ROOT)
    problems = select(corpus_problems(corpus_spec, root / run_id / "corpus"), filters, limit)
    opts = JudgeOptions(device=device, timing_budget_s=timing_budget_s, protocol=protocols.check(protocol))
    run_batch(problems, corpus_spec, run_id=run_id, runs_root=root, opts=opts, progress=progress, prebuild_jobs=build_jobs)
    return run_id, read_records(root, run_id), round(time.monotonic() - started, 1)
