"""Published corpora as models (kbench_lib.generation.corpus): CUDA-L1's release format read row by
row, each kernel judged against its own task, the claim in its record, bad rows recorded with their
cause and the batch going on; resumable by run id."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kbench_lib import metrics
from kbench_lib.generation import corpus
from kbench_lib.records import read_records

from conftest import FIXTURES, REPO

RELU_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Simple model that performs a ReLU activation."""
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 16
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''
RELU_KERNEL = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp_min(x, 0.0)
'''
RAISES_TASK = RELU_TASK.replace("return torch.relu(x)", "raise RuntimeError('this task cannot run')")
NOT_A_TASK = "import torch\n\nclass Model(torch.nn.Module):\n    pass\n"


@pytest.fixture(scope="module")
def small_corpus():
    """A CUDA-L1-format file (tests/fixtures/corpora/README.md): a torch kernel, a cpp kernel (the
    CPU's build path), rows without code (null and "None"), a malformed line, a kernel with a syntax
    error, an eval-mode-only kernel on a BatchNorm task, a task whose reference raises, and one that
    is not a task."""
    return FIXTURES / "corpora" / "tiny.json"


def test_rows_are_read_with_their_claims_and_malformed_lines_kept(small_corpus, tmp_path):
    rows = corpus.read(f"cuda-l1:{small_corpus}")
    assert len(rows) == 9
    assert rows[0].claims == {"claim_speedup": 1.7, "claim_source": "cuda-l1:tiny", "claim_baseline": "eager"}
    assert rows[1].code is None and rows[2].code is None and rows[2].claims["claim_speedup"] is None
    assert rows[3].error and "line 4" in rows[3].error and rows[3].row_id == "tiny.json:4"
    problems = corpus.write_problems(rows, tmp_path)
    assert [p.key for p in problems][:2] == ["level1/19_ReLU_Activation", "level1/20_ReLU_Wider_Tensor"]
    assert problems[3].key == "malformed/line4_malformed"
    assert (tmp_path / "level3" / "2_task.ref_code.txt").read_text() == NOT_A_TASK
    with pytest.raises(corpus.CorpusError, match="unknown corpus format"):
        corpus.read("cuda-l2:x.json")
    with pytest.raises(corpus.CorpusError, match="no such file"):
        corpus.read(f"cuda-l1:{tmp_path / 'missing.json'}")
    assert corpus.task_words(RELU_TASK) == "ReLU_Activation"


def test_a_corpus_run_records_every_row_with_its_cause_and_claim(small_corpus, tmp_path):
    cmd = [sys.executable, "-m", "kbench_lib.cli", "run", "--model", f"cuda-l1:{small_corpus}", "--device", "cpu",
           "--runs-root", str(tmp_path), "--run-id", "audit", "--timing-budget", "0.1", "--quiet", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1])["n"] == 9
    df = read_records(tmp_path, "audit").set_index("problem")
    assert len(df) == 9 and set(df["claim_source"]) == {"cuda-l1:tiny"}
    assert df.loc["level1/19_ReLU_Activation", "correct"] and df.loc["level1/19_ReLU_Activation", "claim_speedup"] == 1.7
    assert df.loc["level1/19_ReLU_Activation", "corpus_row"] == "tiny.json:1"
    assert (df.loc["level1/20_ReLU_Wider_Tensor", "failure"], df.loc["level1/20_ReLU_Wider_Tensor", "cause"]) == ("no_code", "no_code")
    assert df.loc["level1/21_ReLU_Third", "cause"] == "no_code"
    assert df.loc["malformed/line4_malformed", "failure"] == "generation_error" and "not JSON" in df.loc["malformed/line4_malformed", "message"]
    assert df.loc["level1/23_ReLU_Fourth", "failure"] == "load_error" and "syntax error" in df.loc["level1/23_ReLU_Fourth", "message"]
    bn = [k for k in df.index if k.startswith("level2/5_")][0]
    assert df.loc[bn, "cause"] == "eval_mode_only" and df.loc[bn, "claim_speedup"] == 81.9
    cpp = [k for k in df.index if k.startswith("level2/6_")][0]
    assert df.loc[cpp, "backend"] == "cpp" and df.loc[cpp, "cause"] == "eval_mode_only"
    assert df.loc["level3/1_ReLU_Activation", "failure"] == "judge_error"
    assert df.loc["level3/2_task", "failure"] == "judge_error" and "get_inputs" in df.loc["level3/2_task", "message"]
    read = metrics.under_protocol(df.reset_index(), "cuda-l1").set_index("problem")
    assert read.loc[bn, "correct"] and read.loc[cpp, "correct"]
    # the same run id resumes: nothing judged twice
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert again.returncode == 0 and json.loads(again.stdout.strip().splitlines()[-1])["n"] == 0, again.stderr[-2000:]
    assert len(read_records(tmp_path, "audit")) == 9


def test_an_unknown_format_or_missing_file_is_one_line(tmp_path):
    cmd = [sys.executable, "-m", "kbench_lib.cli", "run", "--model", f"cuda-l1:{tmp_path / 'nope.json'}", "--device", "cpu",
           "--runs-root", str(tmp_path)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 2 and out.stderr.strip().count("\n") == 0 and "no such file" in out.stderr


def test_a_folder_model_reads_its_claims(tmp_path):
    from kbench_lib.models import folder_model
    from kbench_lib.problems import load_problem

    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_Scale_Add_ReLU.py").write_text((FIXTURES / "candidates" / "scale_add_relu_torch.py").read_text())
    (tmp_path / "claims.csv").write_text("problem,claimed_speedup,source\nlevel1/1_Scale_Add_ReLU,2.5,paper:a100\n9_Other,n/a,paper\n")
    problem = load_problem(FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    [sample] = folder_model(tmp_path)(problem)
    assert sample.meta == {"claim_speedup": 2.5, "claim_source": "paper:a100", "claim_baseline": "eager"}


def test_a_task_too_large_to_hold_is_a_judge_error_not_a_dead_batch(tmp_path, monkeypatch):
    """A task whose expected outputs over its checked sets exceed the judge's share of the host's
    memory is refused with the sizes in the message, before any candidate runs."""
    from kbench_lib.candidates import load_candidate
    from kbench_lib.judge import JudgeError, JudgeOptions, judge
    from kbench_lib.judging import prepared
    from kbench_lib.problems import load_problem

    task = tmp_path / "19_ReLU.py"
    task.write_text(RELU_TASK)
    cand = tmp_path / "cand.py"
    cand.write_text(RELU_KERNEL)
    opts = JudgeOptions(device="cpu", timing=False)
    monkeypatch.setattr(prepared, "host_memory", lambda: 64 << 10)  # 64 KiB: a quarter is under the task's 4 KiB x its sets
    with pytest.raises(JudgeError, match=r"GiB per input set.*checked sets.*fewer --seeds"):
        judge(load_problem(task), load_candidate(cand), opts)
