"""End to end: ``kbench run --model openai:<name>@<local server> --samples 2`` drives the stand-in
server through prompts, parsing, cache, judge (CPU, SMALL) and records; a second run in replay mode
with the server stopped reproduces the same candidates and verdicts."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("openai")

from standin import StandinServer  # noqa: E402

from kbench_lib.scoring.records import read_records  # noqa: E402

pytestmark = pytest.mark.slow
KEY = "sk-proj-" + "e2eKEYe2e" * 5

SCALE_GOOD = """```python
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return torch.clamp_min(torch.addcmul(b, a, torch.tensor(self.scale)), 0.0)
```"""
SCALE_WRONG = SCALE_GOOD.replace("torch.clamp_min(", "(").replace(", 0.0)", ")")
LINEAR_GOOD = """<think>keep nn.Linear so that the state dict matches</think>
```python
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_f, out_f):
        super().__init__()
        self.linear = nn.Linear(in_f, out_f)

    def forward(self, x):
        return F.gelu(self.linear(x))
```"""


def _kbench_run(tmp_path, url, run_id, *extra):
    cmd = [sys.executable, "-m", "kbench_lib.cli", "run", str(tmp_path / "problems"), "--model", f"openai[KBENCH_E2E_KEY]:standin-coder@{url}",
           "--samples", "2", "--device", "cpu", "--timing-budget", "0.1", "--seeds", "2", "--runs-root", str(tmp_path / "runs"),
           "--run-id", run_id, "--cache-path", str(tmp_path / "cache.sqlite"), "--quiet", "--json", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "KBENCH_E2E_KEY": KEY})
    return r


def test_run_a_local_openai_server_then_replay_it_offline(tmp_path, fixtures):
    import shutil

    shutil.copytree(fixtures / "problems", tmp_path / "problems")
    answers = [{"match": "relu(a * self.scale + b)", "texts": [SCALE_GOOD, SCALE_WRONG]},
               {"match": "F.gelu(self.linear(x))", "texts": [LINEAR_GOOD, "I would fuse the GEMM and the GELU."]}]
    server = StandinServer({"answers": answers, "require_key": KEY}, tmp_path)
    r = _kbench_run(tmp_path, server.openai_url, "live")
    assert r.returncode == 0, r.stderr
    assert server.stats()["requests"] == 4
    server.stop()
    live = read_records(tmp_path / "runs", "live").sort_values(["problem", "sample"]).reset_index(drop=True)
    assert len(live) == 4
    outcomes = sorted((p.split("/")[-1], bool(c), f) for p, c, f in zip(live["problem"], live["correct"], live["failure"].fillna("-")))
    assert outcomes == [("1_Scale_Add_ReLU", False, "output_mismatch"), ("1_Scale_Add_ReLU", True, "-"),
                        ("2_Linear_GELU", False, "no_code"), ("2_Linear_GELU", True, "-")]
    assert live["prompt_tokens"].gt(0).all() and live["response_sha"].notna().all() and not live["gen_cached"].any()

    r = _kbench_run(tmp_path, server.openai_url, "replay", "--cache", "replay")  # the server is gone
    assert r.returncode == 0, r.stderr
    again = read_records(tmp_path / "runs", "replay").sort_values(["problem", "sample"]).reset_index(drop=True)
    cols = ["problem", "sample", "kernel_sha", "response_sha", "prompt_sha", "backend", "correct", "failure"]
    assert again[cols].fillna("-").equals(live[cols].fillna("-")) and again["gen_cached"].all()

    r = _kbench_run(tmp_path, server.openai_url, "miss", "--cache", "replay", "--samples", "3")
    assert r.returncode == 4 and "sample 2" in r.stderr and "replay" in r.stderr
    miss = read_records(tmp_path / "runs", "miss")  # judging overlaps generation: what the cache held may be judged before the miss
    assert set(miss["sample"]) <= {0, 1} and miss["gen_cached"].all()
    assert KEY not in r.stdout + r.stderr
    for path in [*(tmp_path / "runs").rglob("*.parquet"), tmp_path / "cache.sqlite"]:
        assert KEY.encode() not in path.read_bytes()


def test_the_generate_notebook_drives_the_server_then_replays(tmp_path, fixtures):
    papermill = pytest.importorskip("papermill")
    answers = [{"match": "relu(a * self.scale + b)", "texts": [SCALE_GOOD]}, {"match": "F.gelu(self.linear(x))", "texts": [LINEAR_GOOD]}]
    server = StandinServer({"answers": answers}, tmp_path)
    notebook = fixtures.parents[1] / "notebooks" / "02_generate.ipynb"
    params = {"models": [f"openai:standin-coder@{server.openai_url}"], "problems_dir": str(fixtures / "problems"), "levels": [],
              "limit": 0, "samples": 2, "device": "cpu", "seeds": 2, "timing_budget_s": 0.1, "cache_path": str(tmp_path / "c.sqlite"),
              "runs_root": str(tmp_path / "runs")}
    for run_id, mode in (("nb-live", "live"), ("nb-replay", "replay")):
        papermill.execute_notebook(str(notebook), str(tmp_path / f"{run_id}.ipynb"), parameters={**params, "run_id": run_id, "cache_mode": mode},
                                   kernel_name="kbench", cwd=str(notebook.parent), progress_bar=False)
        server.stop()  # the replay runs with no server
    live, again = (read_records(tmp_path / "runs", r).sort_values(["problem", "sample"]).reset_index(drop=True) for r in ("nb-live", "nb-replay"))
    assert len(live) == 4 and live["correct"].all()
    cols = ["problem", "sample", "kernel_sha", "response_sha", "correct", "failure"]
    assert again[cols].fillna("-").equals(live[cols].fillna("-")) and again["gen_cached"].all()
