"""Published corpora as models (kbench_lib.generation.corpus): CUDA-L1's release format read row by
row, each kernel judged against its own task, the claim in its record, bad rows recorded with their
cause and the batch going on; resumable by run id."""
from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from kbench_lib.scoring import metrics
from kbench_lib.generation import corpus
from kbench_lib.scoring.records import read_records

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
    from kbench_lib.generation.models import folder_model
    from kbench_lib.suite.problems import load_problem

    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_Scale_Add_ReLU.py").write_text((FIXTURES / "candidates" / "scale_add_relu_torch.py").read_text())
    (tmp_path / "claims.csv").write_text("problem,claimed_speedup,source\nlevel1/1_Scale_Add_ReLU,2.5,paper:a100\n9_Other,n/a,paper\n")
    problem = load_problem(FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    [sample] = folder_model(tmp_path)(problem)
    assert sample.meta == {"claim_speedup": 2.5, "claim_source": "paper:a100", "claim_baseline": "eager"}


def test_a_task_too_large_to_hold_is_checked_on_fewer_sets_or_refused(tmp_path, monkeypatch):
    """A task whose expected outputs over its checked sets exceed the judge's share of the host's
    memory is checked on as many sets as the share holds (each configuration a prefix of its sets,
    the note saying how many); where even two of the default's and one of every other
    configuration's are over it, it is refused with the sizes in the message, before any
    candidate runs."""
    from kbench_lib.core.candidates import load_candidate
    from kbench_lib.judging.pipeline import JudgeError, JudgeOptions, judge
    from kbench_lib.judging import plan
    from kbench_lib.suite.problems import load_problem

    task = tmp_path / "19_ReLU.py"
    task.write_text(RELU_TASK)
    cand = tmp_path / "cand.py"
    cand.write_text(RELU_KERNEL)
    opts = JudgeOptions(device="cpu", timing=False)
    full = judge(load_problem(task), load_candidate(cand), opts)
    assert full.correct and not any("input sets" in n for n in full.notes)
    per_set = 16 * 64 * 4
    monkeypatch.setattr(plan, "host_memory", lambda: 4 * 6 * per_set)  # a quarter holds six sets
    v = judge(load_problem(task), load_candidate(cand), opts)
    assert v.correct and v.seeds_checked < full.seeds_checked, (v.seeds_checked, full.seeds_checked)
    assert any(n.startswith("checked on ") and "of its memory" in n for n in v.notes), v.notes
    monkeypatch.setattr(plan, "host_memory", lambda: 4 * per_set // 2)  # a quarter holds half a set
    with pytest.raises(JudgeError, match=r"MiB per input set.*checked sets on this machine"):
        judge(load_problem(task), load_candidate(cand), opts)


def _audit_rows():
    """Five GPU-timed records as a corpus audit holds them (judged under cuda-l1)."""
    import pandas as pd

    from kbench_lib.judging.config_checks import new_config

    def cfg(name, kind, tol, checked=True):
        return {**new_config(name, kind), "checked": checked, "tol_needed": tol, "max_abs_err": tol, "sets": 5}

    ok = [cfg("default", "default", 0.0), cfg("default/eval", "eval", 0.0)]
    eval_only = [cfg("default", "default", 2.1), cfg("default/eval", "eval", 1e-7)]
    base = {"device": "cuda", "device_name": "NVIDIA H200", "small": False, "backend": "cuda", "level": "level2", "protocol": "cuda-l1",
            "precision": "fp32", "run_id": "a", "model": "cuda-l1:x", "strategy": "single", "sample": 0}
    rows = [
        {**base, "problem": "level2/1_a", "correct": True, "failure": None, "cause": None, "flags": [], "configs": ok,
         "claim_speedup": 2.0, "speedup_eager": 1.5},
        {**base, "problem": "level2/2_b", "correct": True, "failure": None, "cause": None, "flags": [], "configs": eval_only,
         "claim_speedup": 3.0, "speedup_eager": 2.5},
        {**base, "problem": "level2/3_c", "correct": False, "failure": "no_code", "cause": "no_code", "flags": [], "configs": None,
         "claim_speedup": 5.0, "speedup_eager": None},
        {**base, "problem": "level2/4_d", "correct": True, "failure": None, "cause": None, "flags": ["static_output_buffer: 9 of 9"],
         "configs": ok, "claim_speedup": 4.0, "speedup_eager": 4.0},
        {**base, "problem": "level2/5_e", "correct": True, "failure": None, "cause": None, "flags": ["output_reused: 9 timed calls"],
         "configs": ok, "claim_speedup": 10.0, "speedup_eager": 9.0},
    ]
    return pd.DataFrame(rows)


def test_the_waterfall_joins_rare_failure_causes_into_one_step():
    from kbench_lib.analysis import audit

    df = _audit_rows()
    t = audit.audit_table(df)
    base = t.iloc[0]
    rows = [{**base, "problem": f"level2/{c}_{i}", "correct_kbench": False, "cause_kbench": c, "worst_class": None}
            for c, n in (("output_mismatch", 3), ("load_error", 1), ("nonfinite", 2)) for i in range(n)]
    w = audit.waterfall(pd.concat([t, pd.DataFrame(rows)], ignore_index=True))
    steps = dict(zip(w["step"], w["tasks"]))
    assert steps["fails: output_mismatch"] == 3 and steps["fails: 3 other causes"] == 4 and "fails: load_error" not in steps  # with eval_mode_only (1)


def test_the_audit_sets_claims_beside_measurements_and_walks_down_to_kbench(tmp_path):
    import math

    from kbench_lib.analysis import audit

    df = _audit_rows()
    t = audit.audit_table(df).set_index("problem")
    assert t["outcome"].to_dict() == {"level2/1_a": "trusted", "level2/2_b": "wrong under kbench only", "level2/3_c": "no code",
                                      "level2/4_d": "hazard", "level2/5_e": "cheat"}
    assert t.loc["level2/2_b", "cause_kbench"] == "eval_mode_only" and t.loc["level2/2_b", "correct_own"]
    w = audit.waterfall(t.reset_index())
    assert list(w["step"]) == ["claimed", "no code", "fails: eval_mode_only", "flagged: cheat", "flagged: hazard", "measured on this GPU"]
    assert math.isclose(w["geomean"].iloc[0], (2 * 3 * 5 * 4 * 10) ** 0.2) and math.isclose(w["geomean"].iloc[-1], 1.5 ** 0.2)
    s = audit.audit_summary(df, "cuda-l1-x")
    assert (s["claimed_mean"], s["claimed_median"]) == (4.8, 4.0)
    assert s["reproduced_n"] == 4 and math.isclose(s["reproduced_mean"], (1.5 + 2.5 + 4 + 9) / 4)
    assert s["kbench_fast_0_strict"] == 0.2 and s["kbench_fast_0_no_cheat"] == 0.4  # the hazard counts under no-cheat, the cheat never
    assert s["by_flag_class"] == {"cheat": 1, "hazard": 1, "shortcut": 0} and s["by_outcome"]["no code"] == 1
    made = audit.audit_outputs(df, "cuda-l1:x.json", tmp_path / "b", tmp_path / "f", 12.0)
    assert set(made) == {"summary", "kernels", "claims", "waterfall"}
    assert made["summary"][0].name.startswith("audit-cuda-l1-x-") and (tmp_path / "f" / "nvidia-h200" / "audit-cuda-l1-x-claims.png").exists()
    png = (tmp_path / "f" / "nvidia-h200" / "audit-cuda-l1-x-waterfall.png").read_bytes()
    assert int.from_bytes(png[16:20], "big") >= 1800  # saved at the paper's 300 dpi, not the screen's 100
