"""Agent-style candidates judged once, read under the three protocols (docs/PROTOCOLS.md).

    python benchmarks/protocol_gap.py --out-dir results/benchmarks --records-dir $OUT     # on a GPU
    python benchmarks/protocol_gap.py --device cpu                                        # a check of the script
    python benchmarks/protocol_gap.py --suite-models reference torch-compile --gpus 2 \
        --out-dir $OUT --figures-dir $OUT/figures                                         # the figure

The set (benchmarks/fixtures/agent_style/) holds what published agent kernels get wrong in ways a
reader must tell apart, each beside an honest twin: a Triton GEMM whose tl.dot uses TF32 on an fp32
task (and one told to use IEEE fp32), a tanh-approximated GELU for the exact one (and an erf one), a
kernel that hard-codes the declared row length, and an honest Triton Softplus and a memoising cheat
on an upstream-format problem of a few microseconds. It is judged once under ``kbench`` (one batch,
guards on); every verdict is then read under each protocol from the same records
(:func:`kbench_lib.scoring.metrics.under_protocol`) and set beside what a careful reviewer expects
(:data:`EXPECTED`, at full size on a GPU). One JSON row per candidate goes to
``<out-dir>/<device-slug>/protocol_gap-<date>.json``; the run's records to ``--records-dir``.
Takes about a minute on an H100 (the GEMMs' Triton compilation most of it).

``--suite-models reference torch-compile`` judges those models too, in the same run, over the
problems of ``--levels`` that have a reference solution (the same problems for every model), and
``--figures-dir`` draws the protocol figure over everything judged (:func:`kbench_lib.reports.plots.protocol_plot`:
fast_0 and fast_1 under each protocol per model; what kernelbench-v0 accepts and kbench rejects,
by cause) to ``<figures-dir>/<device-slug>/protocol_gap.{pdf,png}``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kbench_lib import workflows  # noqa: E402
from kbench_lib.reports import plots  # noqa: E402
from kbench_lib.scoring import metrics, protocols  # noqa: E402
from kbench_lib.batch import runner  # noqa: E402
from kbench_lib.judging.pipeline import JudgeOptions  # noqa: E402
from kbench_lib.suite.problems import load_problem  # noqa: E402
from kbench_lib.core.provenance import device_slug, slug  # noqa: E402
from kbench_lib.scoring.records import read_records  # noqa: E402

SET = REPO / "benchmarks" / "fixtures" / "agent_style"
PROBLEMS = {"2_Rectangular_Matmul": REPO / "problems" / "level1" / "2_Rectangular_Matmul.py",
            "54_GELU_Exact": REPO / "problems" / "level1" / "54_GELU_Exact.py",
            "softplus_16x16384": SET / "softplus_16x16384.py"}
# candidate -> (correct under kbench, kernelbench, kernelbench-v0; the cause under kbench; trusted where correct)
# The guards are kbench's under every protocol: the TF32 GEMM runs faster than the fp32 roofline bound
# allows (faster_than_light), so it is correct under kernelbench-v0 and still not trusted there.
EXPECTED = {
    "tf32_dot": ((False, False, True), "reduced_precision", False),
    "ieee_dot": ((True, True, True), None, True),
    "tanh_approx": ((False, False, True), "output_mismatch", True),
    "erf": ((True, True, True), None, True),
    "fixed_row_length": ((False, True, True), "shape_specialisation", True),
    "triton": ((True, True, True), None, True),
    "memoised": (None, None, False),  # caught: rejected, or correct and flagged, under every protocol
}


LAID_OUT = Path(tempfile.gettempdir()) / "kbench-agent-style"  # one name in every run's records: folder:/tmp/kbench-agent-style


def lay_out(folder: Path = LAID_OUT) -> str:
    """The folder model spec of the set, candidates named ``<problem>__<name>.py`` (the set's folder
    also holds a problem file, which a folder model would read as a candidate of itself)."""
    cands = folder
    shutil.rmtree(cands, ignore_errors=True)
    cands.mkdir(parents=True)
    for f in sorted(SET.glob("*__*.py")):
        shutil.copy(f, cands / f.name)
    return f"folder:{cands}"


def read_under_protocols(df) -> list[dict]:
    """One row per candidate: its verdict under each protocol, its cause, what it needs."""
    by = {p: metrics.under_protocol(df, p).reset_index(drop=True) for p in protocols.PROTOCOLS}
    rows = []
    for i, r in df.reset_index(drop=True).iterrows():
        default = next((dict(c) for c in (r["configs"] if r["configs"] is not None else []) if c["kind"] == "default"), {})
        row = {"problem": r["problem"], "candidate": r["sample_name"], "backend": r["backend"],
               "failure_kbench": r["failure"], "flags": list(r["flags"]) if r["flags"] is not None else [],
               "tol_needed_default": default.get("tol_needed"), "ref_tf32_tol_default": default.get("ref_tf32_tol"),
               "max_abs_err": r["max_abs_err"], "runtime_ms": r["runtime_ms"], "speedup_eager": r["speedup_eager"],
               "variants_checked": int(r["variants_checked"] or 0)}
        for p, d in by.items():
            row[f"correct_{p}"] = bool(d.loc[i, "correct"])
            row[f"trusted_{p}"] = bool(d.loc[i, "trusted"])
            row[f"cause_{p}"] = d.loc[i, "cause"] if isinstance(d.loc[i, "cause"], str) else None
        rows.append(row)
    return rows


def check(row: dict) -> list[str]:
    """Where a candidate's verdicts differ from :data:`EXPECTED`."""
    want = EXPECTED.get(row["candidate"])
    if want is None:
        return [f"{row['candidate']}: not in EXPECTED"]
    correct, cause, trusted = want
    got = tuple(row[f"correct_{p}"] for p in protocols.PROTOCOLS)
    out = []
    if correct is None:
        if any(row[f"trusted_{p}"] for p in protocols.PROTOCOLS):
            out.append(f"{row['candidate']}: trusted under some protocol, expected caught everywhere")
        return out
    if got != correct:
        out.append(f"{row['candidate']}: correct {got}, expected {correct}")
    if row["cause_kbench"] != cause:
        out.append(f"{row['candidate']}: cause {row['cause_kbench']}, expected {cause}")
    flagged = any(row[f"correct_{p}"] and not row[f"trusted_{p}"] for p in protocols.PROTOCOLS)
    if trusted and flagged:
        out.append(f"{row['candidate']}: flagged {row['flags']}")
    if not trusted and any(row[f"trusted_{p}"] for p in protocols.PROTOCOLS):
        out.append(f"{row['candidate']}: trusted, expected flagged where correct")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--timing-budget", type=float, default=1.0)
    ap.add_argument("--out-dir", default=None, help="write protocol_gap-<date>.json under <out-dir>/<device-slug>/")
    ap.add_argument("--records-dir", default=None, help="keep the run's records here (default: a temporary folder)")
    ap.add_argument("--from-records", default=None, help="judge nothing: read the runs an earlier call kept in this "
                    "--records-dir (protocol-gap, and protocol-gap-suite where there is one)")
    ap.add_argument("--suite-models", nargs="*", default=[], help="also judge these models (reference, torch-compile) "
                    "over the problems of --levels that have a reference solution")
    ap.add_argument("--levels", nargs="+", default=["level1", "level2"])
    ap.add_argument("--gpus", type=int, default=None, help="spread each model's batch over this many local GPUs")
    ap.add_argument("--build-jobs", type=int, default=8, help="candidates built in parallel while judging goes on")
    ap.add_argument("--figures-dir", default=None, help="draw the protocol figure under <figures-dir>/<device-slug>/")
    a = ap.parse_args()
    opts = JudgeOptions(device=a.device, timing_budget_s=a.timing_budget)
    work = Path(tempfile.mkdtemp(prefix="protocol-gap-"))
    root = Path(a.from_records or a.records_dir or work / "runs")
    problems = [load_problem(p) for p in PROBLEMS.values()]
    if not a.from_records:
        model = lay_out()
        runner.run_batch(problems, model, run_id="protocol-gap", runs_root=root, opts=opts, progress=False, gpus=a.gpus,
                         prebuild_jobs=a.build_jobs)
    df = read_records(root, "protocol-gap")
    df = df.assign(sample_name=[_sample_name(SET, r) for _, r in df.iterrows()])
    # where the verdicts came from: this machine, or (--from-records) the machine whose records these are
    where = slug(str(df["device_name"].iloc[0])) if a.from_records and len(df) else device_slug(a.device)
    on_gpu = str(df["device"].iloc[0]).startswith("cuda") if a.from_records and len(df) else a.device == "cuda"
    found = report(df, problems, a.out_dir, where, on_gpu)  # written before the suite is judged: a suite cut short loses no row
    if a.from_records:
        suite = read_records(root, "protocol-gap-suite") if (root / "protocol-gap-suite").exists() else pd.DataFrame()
    else:
        suite = judge_suite(a.suite_models, a.levels, root, opts, a.gpus, a.build_jobs)
    if a.figures_dir:
        drawn = pd.concat([df.assign(model=AGENT_SET), suite], ignore_index=True) if len(suite) else df.assign(model=AGENT_SET)
        dest = Path(a.figures_dir) / where
        made = plots.save(plots.protocol_plot(drawn), dest / "protocol_gap")
        print("drawn:", ", ".join(str(m) for m in made))
        for name, d in drawn.groupby("model"):
            print(name, json.dumps(metrics.protocol_summary(d, by=("model",)).round(3).to_dict("records"), default=str))
    shutil.rmtree(work, ignore_errors=True)
    return 1 if found else 0


def report(df, problems: list, out_dir: str | None, where: str, on_gpu: bool) -> list[str]:
    """Prints (and with ``out_dir`` writes under ``<out_dir>/<where>/``) one row per candidate, with
    the records' own device, date and commit; returns where they differ from :data:`EXPECTED`
    (judged on a GPU: the CPU's SMALL sizes and interpreter are a check of the script)."""
    order = {p.key: i for i, p in enumerate(problems)}
    df = df.sort_values(["problem", "sample"], key=lambda s: s.map(order) if s.name == "problem" else s)
    rows = read_under_protocols(df)
    found = []
    for row, (_, r) in zip(rows, df.iterrows()):
        row.update({k: None for k, v in row.items() if isinstance(v, float) and v != v})  # NaN: not measured
        row.update(device_name=str(r["device_name"]), date=str(r["timestamp"])[:10], git_sha=str(r["git_sha"] or ""))
        found += check(row) if on_gpu else []
        print(json.dumps(row, default=str), flush=True)
    print(f"{len(rows)} candidates ({', '.join(sorted(df['sample_name']))}); differences from the expected verdicts: {found or 'none'}")
    if out_dir and len(df):
        dest = Path(out_dir) / where
        dest.mkdir(parents=True, exist_ok=True)
        path = dest / f"protocol_gap-{rows[0]['date']}.json"
        path.write_text(json.dumps(rows, indent=1, default=str))
        print("written:", path)
    return found


AGENT_SET = "agent-style set"  # the folder model's name in the figure (its records name a temporary folder)


def judge_suite(models: list[str], levels: list[str], root: Path, opts: JudgeOptions, gpus: int | None,
                build_jobs: int) -> pd.DataFrame:
    """``models`` judged into the same run over the problems of ``levels`` with a reference solution."""
    if not models:
        return pd.DataFrame()
    problems = workflows.select_problems(None, "reference", opts.device, levels)
    print(f"suite: {len(problems)} problems of {', '.join(levels)} with a reference solution; models {', '.join(models)}", flush=True)
    for m in models:
        runner.run_batch(problems, m, run_id="protocol-gap-suite", runs_root=root, opts=opts, progress=False, gpus=gpus,
                         prebuild_jobs=build_jobs)
    return read_records(root, "protocol-gap-suite")


def _sample_name(folder: Path, r) -> str:
    """The candidate file's name part for a record (the folder model numbers a problem's files in
    sorted order as its samples)."""
    stem = str(r["problem"]).split("/")[-1]
    files = sorted(folder.glob(f"{stem}__*.py"))
    i = int(r["sample"])
    return files[i].stem.split("__", 1)[1] if i < len(files) else f"sample{i}"


if __name__ == "__main__":
    sys.exit(main())
