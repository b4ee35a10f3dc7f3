"""Strategies end to end on the CPU: the real judge (SMALL), the real records, and language models
over real HTTP (the official SDK against tests/llm_standin_server.py), then replayed offline."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbench_lib.judging.pipeline import JudgeOptions
from kbench_lib.suite.problems import load_problem
from kbench_lib.scoring.records import read_records
from kbench_lib.reports.search_metrics import verifier_confusion
from kbench_lib.strategies import run_strategy
from test_generation_e2e import SCALE_GOOD

REPO = Path(__file__).resolve().parent.parent

# the stand-in model's correct answer, tagged so that each variant below is a source of its own
GOOD = SCALE_GOOD.replace("class ModelNew(nn.Module):", "class ModelNew(nn.Module):  # good-scale")
WRONG = GOOD.replace("torch.clamp_min(", "(").replace(", 0.0)", ")").replace("good-scale", "wrong-scale")
EVOLVED = [GOOD.replace("torch.clamp_min(", "torch.clamp(").replace(", 0.0)", ", min=0.0)").replace("good-scale", "evolved-1"),
           GOOD.replace("good-scale", "evolved-2").replace("torch.tensor(self.scale)", "torch.tensor(float(self.scale))")]


def _opts():
    return JudgeOptions(device="cpu", n_seeds=2, timing_budget_s=0.1, min_trials=5, max_trials=20, warmup_ms=1.0, run_timeout_s=60)


def _generation(cache, mode="live"):
    return {"samples": 1, "temperature": 0.7, "prompt": {"backend": "torch", "small": True}, "cache_mode": mode, "cache_path": str(cache),
            "progress": False}


@pytest.fixture
def scale_problem(fixtures):
    return load_problem(fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py")


def _records(root, run_id):
    return read_records(root, run_id).sort_values("proposal").reset_index(drop=True)


@pytest.mark.slow
def test_evolve_with_the_tuner_judges_distinct_kernels_and_resumes(tmp_path):
    problem = load_problem(REPO / "problems" / "level1" / "66_L2Normalize.py")
    kw = dict(params={"population": 2, "generations": 1, "proposals": 2}, runs_root=tmp_path / "runs", opts=_opts(),
              cache_path=tmp_path / "c.sqlite", progress=False, verify=["culprit"])
    run_id, rows = run_strategy([problem], "tune", "evolve", run_id="tune", **kw)
    df = _records(tmp_path / "runs", "tune")
    assert len(rows) == len(df) == 4 and df["strategy"].eq("evolve+verify").all()
    assert df["operation"].tolist()[:2] == ["sample", "sample"] and set(df["operation"][2:]) <= {"mutate", "crossover"}
    assert df["kernel_sha"].nunique() == 4 and df["correct"].all() and df["backend"].eq("triton").all()
    assert all(set(p) <= set(df["proposal_id"][:2]) and len(p) for p in df["parent_ids"][2:])
    assert all(dict(k) != dict(df["knobs"][0]) for k in df["knobs"][1:])
    assert all(dict(d) == {"culprit": "pass"} for d in df["verify_decisions"])
    params = json.loads(df["strategy_params"][0])
    assert params["population"] == 2 and params["verifiers"] == ["culprit"]
    _, again = run_strategy([problem], "tune", "evolve", run_id="tune", **kw)
    assert again == []  # everything recorded: nothing judged again
    _, capped = run_strategy([problem], "tune", "evolve", run_id="capped", budget={"judgements": 3}, **kw)
    assert len(capped) == 3


def test_refine_carries_feedback_over_http_then_replays_offline(tmp_path, scale_problem):
    pytest.importorskip("openai")
    from standin import StandinServer

    answers = [{"match": "The judge ran your code", "texts": [GOOD]}, {"match": "relu(a * self.scale + b)", "texts": [WRONG]}]
    server = StandinServer({"answers": answers}, tmp_path)
    model = f"openai:standin-coder@{server.openai_url}"
    kw = dict(params={"turns": 2}, runs_root=tmp_path / "runs", opts=_opts(), progress=False)
    run_strategy([scale_problem], model, "refine", run_id="live", generation=_generation(tmp_path / "c.sqlite"), **kw)
    bodies = server.stats()["bodies"]
    server.stop()
    assert len(bodies) == 2
    second = bodies[1]["messages"]
    assert second[-2]["role"] == "assistant" and "wrong-scale" in second[-2]["content"]
    assert "FAILED (output_mismatch)" in second[-1]["content"] and "Largest absolute error" in second[-1]["content"]
    live = _records(tmp_path / "runs", "live")
    assert live["failure"].tolist()[0] == "output_mismatch" and bool(live["correct"][1])
    assert live["operation"].tolist() == ["sample", "refine"] and list(live["parent_ids"][1]) == ["p0"] and live["turn"].tolist() == [0, 1]
    assert live["prompt_tokens"].gt(0).all()
    # the server is gone: the judge's fresh timings and seeds differ, the prompts do not
    run_strategy([scale_problem], model, "refine", run_id="replay", generation=_generation(tmp_path / "c.sqlite", "replay"), **kw)
    again = _records(tmp_path / "runs", "replay")
    cols = ["proposal_id", "kernel_sha", "response_sha", "prompt_sha", "correct", "failure"]
    assert again[cols].fillna("-").equals(live[cols].fillna("-")) and again["gen_cached"].all()


def test_evolve_over_http_translates_then_mutates_the_correct_kernel(tmp_path, scale_problem):
    pytest.importorskip("openai")
    from standin import StandinServer

    answers = [{"match": "best correct kernels", "texts": EVOLVED}, {"match": "The judge ran your code", "texts": [GOOD]},
               {"match": "relu(a * self.scale + b)", "texts": [WRONG]}]
    server = StandinServer({"answers": answers}, tmp_path)
    model = f"openai:standin-coder@{server.openai_url}"
    kw = dict(params={"population": 1, "generations": 1, "proposals": 2, "translate_turns": 1}, runs_root=tmp_path / "runs", opts=_opts(),
              progress=False)
    run_strategy([scale_problem], model, "evolve", run_id="ev", generation=_generation(tmp_path / "c.sqlite"), **kw)
    bodies = server.stats()["bodies"]
    server.stop()
    run_strategy([scale_problem], model, "evolve", run_id="ev-replay", generation=_generation(tmp_path / "c.sqlite", "replay"), **kw)
    again = _records(tmp_path / "runs", "ev-replay")
    df = _records(tmp_path / "runs", "ev")
    assert again[["proposal_id", "kernel_sha", "operation"]].equals(df[["proposal_id", "kernel_sha", "operation"]]) and again["gen_cached"].all()
    assert df["operation"].tolist() == ["sample", "translate", "mutate", "mutate"]
    assert [list(p) for p in df["parent_ids"]] == [[], ["p0"], ["p1"], ["p1"]] and df["turn"].tolist() == [0, 1, 2, 2]
    assert df["correct"].tolist() == [False, True, True, True] and df["kernel_sha"].nunique() == 4
    mutate = bodies[2]["messages"][-1]["content"]
    assert "### Kernel A" in mutate and "good-scale" in mutate and "Verdict: correct." in mutate


def test_verifiers_over_http_with_ground_truth_and_without(tmp_path, scale_problem):
    pytest.importorskip("openai")
    from standin import StandinServer

    answers = [{"match": "wrong-scale", "texts": ["The relu is missing.\nVERDICT: FAIL: no relu"]},
               {"match": "good-scale", "texts": ["Looks right.\nVERDICT: PASS"]},
               {"match": "relu(a * self.scale + b)", "texts": [WRONG, GOOD]}]
    server = StandinServer({"answers": answers}, tmp_path)
    model = f"openai:standin-coder@{server.openai_url}"
    kw = dict(params={"samples": 2}, runs_root=tmp_path / "runs", opts=_opts(), generation=_generation(tmp_path / "c.sqlite"),
              progress=False, verify=["numerics"])
    run_strategy([scale_problem], model, "single", run_id="truth", ground_truth=True, **kw)
    truth = read_records(tmp_path / "runs", "truth")
    assert truth["judged"].all() and sorted(truth["failure"].fillna("-")) == ["-", "output_mismatch"]
    c = verifier_confusion(truth).set_index("verifier")
    assert (c.loc["numerics", ["tp", "fp", "fn", "tn"]] == [1, 0, 0, 1]).all() and c.loc["numerics", "precision_own"] == 1.0
    assert truth["verify_prompt_tokens"].gt(0).all()
    server.stop()
    kw["generation"] = _generation(tmp_path / "c.sqlite", "replay")  # no server: every answer from the cache
    run_strategy([scale_problem], model, "single", run_id="skip", **kw)
    skip = read_records(tmp_path / "runs", "skip").set_index("failure", drop=False)
    assert not skip.loc["verifier_rejected", "judged"] and "no relu" in skip.loc["verifier_rejected", "message"]
    assert verifier_confusion(skip).set_index("verifier").loc["numerics", "with_ground_truth"] == 1


@pytest.mark.slow
def test_kbench_run_takes_a_strategy(tmp_path):
    problems = tmp_path / "problems" / "level2"
    problems.mkdir(parents=True)
    shutil.copy(REPO / "problems" / "level2" / "2_Gemm_BiasAdd_ReLU_Square.py", problems)
    cmd = [sys.executable, "-m", "kbench_lib.cli", "run", str(tmp_path / "problems"), "--model", "tune", "--strategy", "refine",
           "--turns", "3", "--device", "cpu", "--seeds", "2", "--timing-budget", "0.1", "--runs-root", str(tmp_path / "runs"),
           "--run-id", "cli", "--cache-path", str(tmp_path / "c.sqlite"), "--budget-proposals", "2", "--quiet", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"run_id": "cli", "n": 2, "trusted": 2, "trust": "strict"}
    df = _records(tmp_path / "runs", "cli")
    assert df["operation"].tolist() == ["sample", "refine"] and df["strategy"].eq("refine").all()
