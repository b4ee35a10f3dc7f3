"""The mode dimension (kbench_lib.judging.modes) and the cuda-l1 protocol: where the reference depends
on ``training``, the candidate is also checked in eval mode on the declared shape; a kernel right in
eval mode only is ``eval_mode_only`` under kbench and correct under cuda-l1; reduced precision
reaches half-precision compute through the autocast envelopes."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kbench_lib.scoring import metrics, protocols
from kbench_lib.core.candidates import load_candidate
from kbench_lib.judging.config_checks import new_config
from kbench_lib.judging.pipeline import JudgeOptions, judge
from kbench_lib.suite.problems import load_problem
from kbench_lib.scoring.records import RecordWriter, read_records, row_from_verdict

from conftest import FIXTURES, REPO

MODES = FIXTURES / "modes"
CPU = dict(device="cpu", timing_budget_s=0.1, min_trials=5, max_trials=20, warmup_ms=1.0, run_timeout_s=60)


def _cfg(name, kind, tol=None, hard=None, checked=True, follows=None, **more):
    return {**new_config(name, kind), "checked": checked, "tol_needed": tol, "hard_failure": hard, "max_abs_err": tol,
            "sets": 1 if checked else 0, "follows": follows, **more}


def test_cuda_l1_reads_the_eval_configuration_and_says_so_where_a_record_has_none():
    eval_only = [_cfg("default", "default", 2.1), _cfg("variant0", "declared", 1.9), _cfg("default/eval", "eval", 1e-7)]
    d = protocols.decide(eval_only, "fp32", "kbench")
    assert (d["correct"], d["failure"], d["cause"]) == (False, "output_mismatch", "eval_mode_only") and "eval mode" in d["message"]
    assert protocols.decide(eval_only, "fp32", "kernelbench")["cause"] == "eval_mode_only"
    assert protocols.decide(eval_only, "fp32", "cuda-l1")["correct"]
    # the reference does not depend on training: the default's result stands for the eval configuration
    free = [_cfg("default", "default", 3e-3), _cfg("default/eval", "eval", checked=False, follows="default", reason="same")]
    assert protocols.decide(free, "fp32", "cuda-l1")["correct"] and not protocols.decide(free, "fp32", "kbench")["correct"]
    bad = [_cfg("default", "default", hard="runtime_error"), _cfg("default/eval", "eval", checked=False, follows="default")]
    assert protocols.decide(bad, "fp32", "cuda-l1")["failure"] == "runtime_error"
    # a record judged before modes existed: cuda-l1 says it cannot read it, rather than guess
    old = [{k: v for k, v in _cfg("default", "default", 0.0).items() if k not in ("mode", "follows", "note")}]
    d = protocols.decide(old, "fp32", "cuda-l1")
    assert (d["correct"], d["failure"]) == (False, "not_checked") and protocols.NO_EVAL_RESULT in d["message"]
    assert protocols.decide(old, "fp32", "kbench")["correct"]
    # right in training mode, wrong in eval mode: kbench accepts (its models are in training mode), cuda-l1 does not
    train_only = [_cfg("default", "default", 0.0), _cfg("default/eval", "eval", 0.6)]
    assert protocols.decide(train_only, "fp32", "kbench")["correct"] and protocols.decide(train_only, "fp32", "cuda-l1")["cause"] == "output_mismatch"
    assert protocols.timed_mode("cuda-l1") == "eval" and protocols.timed_mode("kbench") == "train"
    with pytest.raises(protocols.UnknownProtocol, match="kbench, kernelbench, kernelbench-v0, cuda-l1"):
        protocols.check("cuda-l2")


def test_reduced_precision_names_the_narrowest_envelope_that_holds_the_error():
    bf16 = [_cfg("default", "default", 9e-3, ref_tf32_tol=8e-4, ref_fp16_tol=8e-4, ref_bf16_tol=7e-3)]
    d = protocols.decide(bf16, "fp32", "kbench")
    assert d["cause"] == "reduced_precision" and "bf16 autocast" in d["message"]
    fp16 = [_cfg("default", "default", 2e-3, ref_tf32_tol=1e-4, ref_fp16_tol=8e-4, ref_bf16_tol=7e-3)]
    assert protocols.envelope(fp16[0]) == "fp16 autocast"
    beyond = [_cfg("default", "default", 0.1, ref_tf32_tol=1e-4, ref_fp16_tol=8e-4, ref_bf16_tol=7e-3)]
    assert protocols.decide(beyond, "fp32", "kbench")["cause"] == "output_mismatch"


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """The mode fixtures judged once on the CPU under kbench (torch and cpp candidates), and the
    eval-mode-only kernel once under cuda-l1; their records."""
    bn = load_problem(MODES / "1_BatchNorm_Pool.py")
    dropout = load_problem(MODES / "2_Linear_Dropout.py")
    matmul = load_problem(REPO / "problems" / "level1" / "2_Rectangular_Matmul.py")
    cands = {"honest": (bn, MODES / "bn_pool_honest.py"), "eval_only": (bn, MODES / "bn_pool_eval_only.py"),
             "eval_only_cpp": (bn, MODES / "bn_pool_eval_only_cpp.py"), "puts_itself_in_eval": (bn, MODES / "bn_pool_puts_itself_in_eval.py"),
             "eval_ignored": (bn, MODES / "bn_pool_eval_ignored.py"), "no_dropout": (dropout, MODES / "linear_no_dropout.py"),
             "bf16": (matmul, FIXTURES / "protocols" / "matmul_bf16.py")}
    verdicts = {k: judge(p, load_candidate(f), JudgeOptions(**CPU)) for k, (p, f) in cands.items()}
    verdicts["eval_only@cuda-l1"] = judge(bn, load_candidate(MODES / "bn_pool_eval_only.py"), JudgeOptions(**CPU, protocol="cuda-l1"))
    root = tmp_path_factory.mktemp("runs")
    w = RecordWriter(root, "modes")
    w.append([row_from_verdict(v, run_id="modes", model=k) for k, v in verdicts.items()])
    return verdicts, read_records(root, "modes")


def _eval(v) -> dict:
    return next(c for c in v.configs if c["kind"] == "eval")


def test_a_reference_that_depends_on_training_is_checked_in_eval_mode_too(judged):
    verdicts, _ = judged
    honest = verdicts["honest"]
    assert honest.correct and all(c["passed"] for c in honest.configs), honest.message
    e = _eval(honest)
    assert e["config"] == "small/eval" and e["mode"] == "eval" and e["checked"] and e["sets"] == honest.seeds_checked and not e["follows"]
    assert {c["mode"] for c in honest.configs if c["kind"] != "eval"} == {"train"}
    assert honest.variants_checked == len([c for c in honest.configs if c["kind"] in ("declared", "derived")])


@pytest.mark.parametrize("name", ["eval_only", "eval_only_cpp", "no_dropout", "puts_itself_in_eval"])
def test_right_in_eval_mode_only_is_eval_mode_only_under_kbench(judged, name):
    v = judged[0][name]
    assert not v.correct and v.failure == "output_mismatch" and v.cause == "eval_mode_only", v.message
    assert "passes in eval mode" in v.message and _eval(v)["passed"]
    assert v.runtime_ms is None  # timed in training mode, where it is wrong: no time
    if name == "puts_itself_in_eval":
        assert "put itself in eval mode" in v.configs[0]["note"]


def test_under_cuda_l1_the_eval_mode_kernel_is_correct_and_timed_in_eval_mode(judged):
    verdicts, df = judged
    v = verdicts["eval_only@cuda-l1"]
    assert v.correct and v.protocol == "cuda-l1" and v.cause is None, v.message
    assert v.runtime_ms and v.baseline_ms  # timed, against a baseline timed in eval mode too
    assert not v.configs[0]["passed"]  # still recorded: wrong in training mode
    by = {p: metrics.under_protocol(df, p).set_index("model") for p in protocols.PROTOCOLS}
    assert by["cuda-l1"].loc["eval_only", "correct"] and by["cuda-l1"].loc["no_dropout", "correct"]
    assert by["kbench"].loc["eval_only@cuda-l1", "cause"] == "eval_mode_only"
    assert not by["cuda-l1"].loc["eval_ignored", "correct"] and by["kbench"].loc["eval_ignored", "correct"]
    gap = metrics.protocol_gap(df, "cuda-l1", "kbench", by=())
    assert gap.iloc[0]["eval_mode_only"] == 5


def test_a_candidate_that_ignores_eval_is_recorded_as_such(judged):
    v = judged[0]["eval_ignored"]
    assert v.correct  # right in training mode, which decides under kbench
    e = _eval(v)
    assert not e["passed"] and "overrides eval()" in e["note"] and "training mode after eval()" in e["note"]


def test_a_bf16_product_on_an_fp32_task_is_reduced_precision(judged):
    v = judged[0]["bf16"]
    assert v.failure == "output_mismatch" and v.cause == "reduced_precision", v.message
    assert "bf16 autocast" in v.message
    d = v.configs[0]
    assert d["ref_bf16_tol"] and d["tol_needed"] <= protocols.ENVELOPE * d["ref_bf16_tol"] and d["ref_tf32_tol"] < d["tol_needed"]
    # a reference that does not depend on training: its eval configuration follows the default
    assert _eval(v)["follows"] == d["config"] and "does not depend on training" in _eval(v)["reason"]


def test_records_keep_the_mode_dimension(judged):
    _, df = judged
    row = df.set_index("model").loc["eval_only"]
    configs = list(row["configs"])
    assert [c["mode"] for c in configs][-1] == "eval" and configs[-1]["kind"] == "eval"
    assert row["cause"] == "eval_mode_only"
    notes = df.set_index("model").loc["puts_itself_in_eval", "configs"][0]["note"]
    assert "eval mode" in notes


def test_eval_json_under_cuda_l1():
    cmd = [sys.executable, "-m", "kbench_lib.cli", "eval", str(MODES / "1_BatchNorm_Pool.py"), str(MODES / "bn_pool_eval_only.py"),
           "--device", "cpu", "--timing-budget", "0.1", "--json", "--protocol", "cuda-l1"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    d = json.loads(out.stdout.strip().splitlines()[-1])
    assert d["correct"] and d["protocol"] == "cuda-l1" and d["configs"][-1]["config"] == "small/eval"
    text = subprocess.run(cmd[:-3], capture_output=True, text=True, timeout=300, cwd=REPO).stdout
    assert "cause: eval_mode_only" in text and "small/eval" in text


def test_a_reference_that_fails_in_eval_mode_is_judged_in_training_mode_only(tmp_path):
    problem = tmp_path / "3_Train_Only.py"
    problem.write_text(
        "import torch\nimport torch.nn as nn\nN = 16\nSMALL = dict(N=8)\nSMALL_VARIANTS = [dict(N=5)]\n\n"
        "class Model(nn.Module):\n    def forward(self, x):\n"
        "        if not self.training:\n            raise RuntimeError('this model runs in training mode only')\n"
        "        return x * 2\n\n"
        "def get_inputs():\n    return [torch.randn(N, N)]\n\ndef get_init_inputs():\n    return []\n")
    cand = tmp_path / "cand.py"
    cand.write_text("import torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x * 2\n")
    p = load_problem(problem)
    for protocol in ("kbench", "cuda-l1"):
        v = judge(p, load_candidate(cand), JudgeOptions(**CPU, protocol=protocol))
        assert v.correct, v.message
        e = _eval(v)
        assert e["follows"] == v.configs[0]["config"] and "raised in eval mode" in e["reason"] and "training mode only" in e["reason"]
        assert v.runtime_ms  # timed in training mode, the reference's only one


@pytest.mark.gpu
def test_on_a_gpu_modes_and_static_buffers():
    """Full size on CUDA. The eval-mode-only kernel: eval_mode_only under kbench (not timed), correct
    and timed under cuda-l1 (a speedup over a baseline timed in eval mode). A GEMM into a kept
    buffer and one through CUDA graphs: correct, flagged static_output_buffer (a hazard), no cheat;
    one that returns its buffer without computing again: rejected."""
    import torch

    from kbench_lib.scoring import flags

    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    bn = load_problem(MODES / "1_BatchNorm_Pool.py")
    eval_only = load_candidate(MODES / "bn_pool_eval_only.py")
    v = judge(bn, eval_only, JudgeOptions(device="cuda", timing_budget_s=1.0))
    assert not v.correct and v.cause == "eval_mode_only" and v.runtime_ms is None, v.message
    v = judge(bn, eval_only, JudgeOptions(device="cuda", timing_budget_s=1.0, protocol="cuda-l1"))
    assert v.correct and v.runtime_ms and v.speedup and _eval(v)["checked"] and _eval(v)["sets"] >= 5, v.message
    assert not [f for f in v.flags if flags.flag_class(f) == "cheat"], v.flags
    gemm = load_problem(REPO / "problems" / "level1" / "2_Rectangular_Matmul.py")
    proto = FIXTURES / "protocols"
    opts = JudgeOptions(device="cuda", timing_budget_s=1.0)
    for name in ("matmul_static_buffer.py", "matmul_cuda_graphs.py"):
        v = judge(gemm, load_candidate(proto / name), opts)
        assert v.correct, (name, v.message)
        assert any(f.startswith("static_output_buffer") for f in v.flags), (name, v.flags)
        assert not [f for f in v.flags if flags.flag_class(f) == "cheat"], (name, v.flags)
        assert flags.trusted(v.correct, v.flags, "no-cheat") and not flags.trusted(v.correct, v.flags, "strict")
    v = judge(gemm, load_candidate(proto / "matmul_stale_buffer.py"), opts)
    assert not v.correct and v.failure == "output_mismatch", v.message
