"""The offline tuner's search on the GPU, at full size (skipped without CUDA)."""
from pathlib import Path

import pytest

from kbench_lib.judging.pipeline import JudgeOptions
from kbench_lib.suite.problems import load_problem
from kbench_lib.scoring.records import read_records
from kbench_lib.strategies import run_strategy, workflow

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def test_evolve_tunes_a_triton_solution_on_the_gpu(tmp_path):
    problem = load_problem(REPO / "problems" / "level2" / "2_Gemm_BiasAdd_ReLU_Square.py")
    opts = JudgeOptions(device="cuda", small=False, n_seeds=2, timing_budget_s=0.5)
    run_strategy([problem], "tune", "evolve", params={"population": 2, "generations": 2, "proposals": 2}, verify=["culprit"],
                 ground_truth=True, run_id="gpu", runs_root=tmp_path, opts=opts, cache_path=tmp_path / "c.sqlite", progress=False)
    df = read_records(tmp_path, "gpu")
    assert len(df) == 6 and df["kernel_sha"].nunique() == 6 and df["judged"].all()
    assert df["device"].str.startswith("cuda").all() and not df["small"].any()
    seed = df[df["proposal_id"] == "p0"].iloc[0]
    assert seed["correct"] and not len(seed["flags"]) and seed["runtime_ms"] > 0
    assert seed["top_kernels"] is not None and len(seed["top_kernels"]) >= 1  # the profile reached the record
    table = workflow.improvements(df).iloc[0]
    assert table["trusted"] >= 1 and table["gain"] >= 1.0  # the best is at least the solution (it is in the search)
