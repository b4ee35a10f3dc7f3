import pandas as pd
import pytest

from kbench_lib import baselines_store
from kbench_lib.baselines import sweep

pytestmark = pytest.mark.slow


def test_sweep_is_resumable_and_records_failures(scale_add_relu, tmp_path):
    folder = sweep([scale_add_relu], modes=("eager", "cudagraph"), device="cpu", root=tmp_path, budget_s=0.2, progress=False)
    files = sorted(folder.glob("*.parquet"))
    assert len(files) == 2
    df = pd.concat([pd.read_parquet(f) for f in files]).set_index("mode")
    assert df.loc["eager", "runtime_ms"] > 0 and df.loc["eager", "n_trials"] >= 100
    assert df.loc["cudagraph", "failure"] == "unsupported"
    for col in ("torch_version", "git_sha", "device_name", "date", "flops", "bytes"):
        assert col in df.columns
    stamp = [f.stat().st_mtime_ns for f in files]
    sweep([scale_add_relu], modes=("eager", "cudagraph"), device="cpu", root=tmp_path, budget_s=0.2, progress=False)
    assert [f.stat().st_mtime_ns for f in files] == stamp  # nothing measured twice
    # stored SMALL rows never stand in for a full-size baseline
    assert baselines_store.lookup(scale_add_relu.key, "eager", "cpu", root=tmp_path) is None


def test_compile_mode_compiles_in_parallel_first_then_times_with_a_warm_cache(scale_add_relu, fixtures, tmp_path):
    from kbench_lib.problems import load_problem

    other = load_problem(fixtures / "problems" / "level1" / "2_Linear_GELU.py")
    folder = sweep([scale_add_relu, other], modes=("compile",), device="cpu", root=tmp_path, budget_s=0.2, progress=False, compile_jobs=2)
    df = pd.concat([pd.read_parquet(f) for f in sorted(folder.glob("*.parquet"))]).set_index("problem")
    assert len(df) == 2 and df["failure"].isna().all(), df[["failure", "error"]]
    assert (df["runtime_ms"] > 0).all()
    # the cold compile ran in the parallel phase; the timing process found its cache warm
    assert (df["compile_cold_s"] > 0).all() and (df["compile_s"] > 0).all()
    assert (df["compile_s"] < df["compile_cold_s"]).all(), df[["compile_cold_s", "compile_s"]]
    assert any((folder / ".work" / "cache" / "inductor").iterdir())
