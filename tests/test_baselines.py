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
