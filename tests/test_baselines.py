import os

import pandas as pd
import pytest

from kbench_lib.suite import baselines_store
from kbench_lib.judging.baselines import sweep

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
    from kbench_lib.suite.problems import load_problem

    other = load_problem(fixtures / "problems" / "level1" / "2_Linear_GELU.py")
    folder = sweep([scale_add_relu, other], modes=("compile",), device="cpu", root=tmp_path, budget_s=0.2, progress=False, compile_jobs=2)
    df = pd.concat([pd.read_parquet(f) for f in sorted(folder.glob("*.parquet"))]).set_index("problem")
    assert len(df) == 2 and df["failure"].isna().all(), df[["failure", "error"]]
    assert (df["runtime_ms"] > 0).all()
    # the cold compile ran in the parallel phase; the timing process found its cache warm
    assert (df["compile_cold_s"] > 0).all() and (df["compile_s"] > 0).all()
    assert (df["compile_s"] < df["compile_cold_s"]).all(), df[["compile_cold_s", "compile_s"]]
    assert any((folder / ".work" / "cache" / "inductor").iterdir())


def _problem_file(folder, name: str, body: str):
    from kbench_lib.suite.problems import load_problem

    path = folder / "level1" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'''"""A problem whose reference {name.split("_", 1)[1][:-3].lower()}s, for the sweep's own tests."""
import os
import time

import torch
import torch.nn as nn

TAGS = ["elementwise"]
N = 64
SMALL = dict(N=8)


class Model(nn.Module):
    def forward(self, a):
{body}
        return a + 1


def get_inputs():
    return [torch.randn(N, N)]


def get_init_inputs():
    return []
''')
    return load_problem(path)


def test_a_failing_crashing_or_hanging_problem_is_a_row_and_the_sweep_goes_on(scale_add_relu, tmp_path):
    probs = tmp_path / "problems"
    raises = _problem_file(probs, "1_Raise.py", "        raise ValueError('bad reference')")
    crashes = _problem_file(probs, "2_Crash.py", "        os._exit(9)")
    hangs = _problem_file(probs, "3_Hang.py", "        time.sleep(3600)")
    folder = sweep([raises, crashes, hangs, scale_add_relu], modes=("eager",), device="cpu", root=tmp_path / "out", budget_s=0.2,
                   timeout_s=6.0, progress=False)
    df = pd.concat([pd.read_parquet(f) for f in sorted(folder.glob("*.parquet"))]).set_index("problem")
    assert len(df) == 4
    assert df.loc[raises.key, "failure"] == "runtime_error" and "bad reference" in df.loc[raises.key, "error"]
    assert df.loc[crashes.key, "failure"] == "crash" and "exit 9" in df.loc[crashes.key, "error"]
    assert df.loc[hangs.key, "failure"] == "timeout"
    assert pd.isna(df.loc[scale_add_relu.key, "failure"]) and df.loc[scale_add_relu.key, "runtime_ms"] > 0


def test_levels_are_taken_in_turn():
    from kbench_lib.judging.baselines import _interleaved

    keys = ["l1/a", "l1/b", "l1/c", "l2/a", "l3/a", "l3/b"]
    level = {k: k.split("/")[0] for k in keys}
    assert _interleaved(keys, level) == ["l1/a", "l2/a", "l3/a", "l1/b", "l3/b", "l1/c"]


def test_the_measuring_child_is_told_the_code_version(tmp_path, monkeypatch):
    """The sandbox passes no environment on by itself; a copy of the tree without .git (the GPU
    machine's) knows its commit only from KBENCH_GIT_SHA, so the sweep hands it over."""
    from kbench_lib.core import provenance
    from kbench_lib.judging import baselines

    monkeypatch.setenv("KBENCH_GIT_SHA", "abc1234")
    provenance.git_sha.cache_clear()
    try:
        env = baselines._child_env(tmp_path)
    finally:
        provenance.git_sha.cache_clear()
    assert env["KBENCH_GIT_SHA"] == "abc1234" and "TORCHINDUCTOR_CACHE_DIR" in env


def test_a_lookup_reads_only_its_own_file_and_a_file_written_again(tmp_path, monkeypatch):
    """The judge's lookup opens the one file its row is written to (reading every file of the
    H100's 798 took seconds in every judging process): another file that cannot even be read does
    not matter, a problem with no file has no stored time, and a file written again is read again."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setattr(baselines_store, "device_slug", lambda device: "some-gpu")
    folder = tmp_path / "some-gpu"
    folder.mkdir()
    (folder / "compile-fp32-level1__2_Other.parquet").write_bytes(b"not parquet")
    path = folder / baselines_store.file_name("level1/1_Mine", "compile", "fp32")
    assert path.name == "compile-fp32-level1__1_Mine.parquet"
    pq.write_table(pa.Table.from_pylist([{"problem": "level1/1_Mine", "mode": "compile", "precision": "fp32", "small": False,
                                          "runtime_ms": 1.5}]), path)
    assert baselines_store.lookup("level1/1_Mine", "compile", "cuda", root=tmp_path) == 1.5
    assert baselines_store.lookup("level1/3_Absent", "compile", "cuda", root=tmp_path) is None
    assert baselines_store.lookup("level1/1_Mine", "eager", "cuda", root=tmp_path) is None
    pq.write_table(pa.Table.from_pylist([{"problem": "level1/1_Mine", "mode": "compile", "precision": "fp32", "small": False,
                                          "runtime_ms": 2.5}]), path)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert baselines_store.lookup("level1/1_Mine", "compile", "cuda", root=tmp_path) == 2.5
