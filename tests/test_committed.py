"""The results committed under results/: only git-tracked files, the latest row per candidate."""
import subprocess

import pandas as pd
import pytest

from kbench_lib.scoring import committed, metrics
from kbench_lib.scoring.records import RecordWriter


def _row(problem, ts, runtime):
    return {"model": "reference", "problem": problem, "level": "level1", "device": "cuda", "device_name": "GPU X",
            "precision": "fp32", "small": False, "sample": 0, "turn": 0, "correct": True, "flags": [],
            "runtime_ms": runtime, "speedup_eager": 1.0 / runtime, "timestamp": pd.Timestamp(ts, tz="UTC")}


def test_latest_row_per_candidate_supersedes_earlier_ones():
    df = pd.DataFrame([_row("level1/a", "2026-01-01", 2.0), _row("level1/a", "2026-01-02", 1.0), _row("level1/b", "2026-01-01", 3.0)])
    kept = committed.latest(df)
    assert sorted(kept["problem"]) == ["level1/a", "level1/b"]
    assert kept.set_index("problem").loc["level1/a", "runtime_ms"] == 1.0


def test_strategies_of_one_model_are_different_candidates_and_a_rewritten_solution_supersedes():
    rows = [{**_row("level1/a", "2026-01-01", 2.0), "strategy": "single", "backend": "triton"},
            {**_row("level1/a", "2026-01-02", 1.0), "strategy": "refine", "backend": "cuda"},
            {**_row("level1/a", "2026-01-03", 1.5), "strategy": "single", "backend": "cuda"},
            {**_row("level1/a", "2026-01-04", 0.5), "strategy": "single", "backend": "cuda", "run_id": "later"}]
    kept = committed.latest(pd.DataFrame(rows))
    # the Triton solution rewritten in CUDA is superseded; a later run supersedes too; refine stays apart
    assert sorted(zip(kept["strategy"], kept["backend"], kept["runtime_ms"])) == [("refine", "cuda", 1.0), ("single", "cuda", 0.5)]


def test_only_tracked_record_files_count(tmp_path):
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("git is not installed")
    results = tmp_path / "results"
    RecordWriter(results / "runs", "published").append(_row("level1/a", "2026-01-01", 1.0))
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "results"], check=True)
    RecordWriter(results / "runs", "local").append(_row("level1/b", "2026-01-02", 1.0))  # written after: untracked
    (results / "baselines" / "gpu-x").mkdir(parents=True)
    pd.DataFrame([{"problem": "level1/a", "mode": "eager", "runtime_ms": 1.0}]).to_parquet(results / "baselines" / "gpu-x" / "e.parquet")
    rows, superseded = committed.records(results)
    assert list(rows["problem"]) == ["level1/a"] and superseded == 0  # the untracked run and the baselines are not records
    assert committed.baselines(results).empty  # the baseline file is not tracked either


def test_the_repository_has_committed_gpu_results():
    rows, _ = committed.records()
    assert len(rows) and not rows.duplicated(committed.KEY).any()
    h100 = rows[rows["device_name"] == "NVIDIA H100 80GB HBM3"]
    assert metrics.kernel_timed(h100).all() and metrics.trusted(h100).any()
    base = committed.baselines()
    assert {"eager", "compile"} <= set(base["mode"]) and base["sol_ms"].notna().any()


@pytest.mark.slow
def test_the_committed_tables_are_what_the_committed_records_give(tmp_path):
    """`make figures` leaves the tree as it is: every committed table (CSV) is what the committed
    records and baselines give today (figures' pixels depend on the machine's fonts; their tables do not)."""
    from kbench_lib.analysis.figures import committed_all

    made = committed_all(tmp_path)
    fresh = {p.relative_to(tmp_path): p for paths in made.values() for p in paths if p.suffix == ".csv"}
    assert fresh
    stale = [str(rel) for rel, p in fresh.items() if not (committed.RESULTS / "figures" / rel).is_file()
             or (committed.RESULTS / "figures" / rel).read_text() != p.read_text()]
    assert stale == [], f"run `make figures` and commit: {stale}"
