"""Protocols (kbench_lib.scoring.protocols): every configuration checked and recorded, the protocol decides
``correct``, rejections carry their cause, and records judged once read under any protocol."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace

import pandas as pd
import pytest

from kbench_lib.scoring import metrics, protocols
from kbench_lib.core.candidates import load_candidate
from kbench_lib.judging.config_checks import new_config
from kbench_lib.judging.pipeline import judge
from kbench_lib.suite.problems import load_problem
from kbench_lib.scoring.records import RecordWriter, read_records, row_from_verdict

from conftest import FIXTURES, REPO

PROTO = FIXTURES / "protocols"


def _cfg(name, kind, tol=None, hard=None, ref=None, checked=True):
    return {**new_config(name, kind), "checked": checked, "tol_needed": tol, "hard_failure": hard, "ref_tf32_tol": ref,
            "max_abs_err": tol, "sets": 1 if checked else 0}


def test_each_protocol_reads_the_same_configurations_its_own_way():
    specialised = [_cfg("small", "default", 2e-7), _cfg("small_variant0", "declared", hard="runtime_error")]
    loose = [_cfg("small", "default", 3e-3), _cfg("small_variant0", "declared", 2e-3)]
    d = protocols.decide(specialised, "fp32", "kbench")
    assert (d["correct"], d["failure"], d["cause"]) == (False, "runtime_error", "shape_specialisation")
    assert d["message"].startswith("[small_variant0]") and "specialised" in d["message"]
    assert protocols.decide(specialised, "fp32", "kernelbench")["correct"]
    assert protocols.decide(specialised, "fp32", "kernelbench-v0")["correct"]
    d = protocols.decide(loose, "fp32", "kernelbench")
    assert (d["correct"], d["failure"], d["cause"]) == (False, "output_mismatch", "output_mismatch")
    assert protocols.decide(loose, "fp32", "kernelbench-v0")["correct"]
    assert not protocols.decide(loose, "fp32", "kbench")["correct"]
    assert protocols.decide(loose, "bf16", "kbench")["correct"]  # 1e-2 for bf16 under every protocol


def test_reduced_precision_is_an_error_within_the_references_own_tf32_error():
    within = [_cfg("default", "default", 6e-4, ref=4e-4), _cfg("v", "derived", 5e-4, ref=3e-4)]
    d = protocols.decide(within, "fp32", "kbench")
    assert (d["failure"], d["cause"]) == ("output_mismatch", "reduced_precision") and "TF32" in d["message"]
    beyond = [_cfg("default", "default", 6e-3, ref=4e-4)]
    assert protocols.decide(beyond, "fp32", "kbench")["cause"] == "output_mismatch"
    no_gemm = [_cfg("default", "default", 6e-4, ref=0.0)]  # the reference makes no TF32 error: no envelope
    assert protocols.decide(no_gemm, "fp32", "kbench")["cause"] == "output_mismatch"
    hard = [_cfg("default", "default", hard="nonfinite", ref=4e-4)]
    assert protocols.decide(hard, "fp32", "kernelbench-v0")["cause"] == "nonfinite"


def test_a_configuration_not_checked_never_passes_and_an_unknown_protocol_lists_the_choices():
    configs = [_cfg("d", "default", 0.0), _cfg("v0", "derived", hard="crash"), _cfg("v1", "derived", checked=False)]
    assert protocols.config_failure(configs[2], 1.0) == "not_checked"
    assert protocols.decide(configs, "fp32", "kbench")["failure"] == "crash"
    assert protocols.decide(configs, "fp32", "kernelbench")["correct"]
    with pytest.raises(protocols.UnknownProtocol, match="kbench, kernelbench, kernelbench-v0"):
        protocols.check("kernelbench-v1")
    assert protocols.loosest_tolerance("fp32") == 1e-2 and math.isclose(protocols.tolerance("kernelbench", "fp32"), 1e-4)


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """Four torch candidates judged once on the CPU under kbench: an honest one, one that hard-codes
    the SMALL row length, one in fp16, and a TF32-rounded matrix product."""
    from kbench_lib.judging.pipeline import JudgeOptions

    opts = JudgeOptions(device="cpu", timing_budget_s=0.1, min_trials=5, max_trials=20, warmup_ms=1.0, run_timeout_s=60)
    relu = load_problem(FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    matmul = load_problem(REPO / "problems" / "level1" / "2_Rectangular_Matmul.py")
    cands = {"honest": (relu, FIXTURES / "candidates" / "scale_add_relu_torch.py"),
             "rows_of_96": (relu, PROTO / "scale_add_relu_rows_of_96.py"),
             "half": (relu, PROTO / "scale_add_relu_half.py"),
             "tf32": (matmul, PROTO / "matmul_tf32.py")}
    verdicts = {k: judge(p, load_candidate(f), opts) for k, (p, f) in cands.items()}
    root = tmp_path_factory.mktemp("runs")
    w = RecordWriter(root, "protocols")
    w.append([row_from_verdict(v, run_id="protocols", model=k) for k, v in verdicts.items()])
    return verdicts, read_records(root, "protocols")


def test_every_configuration_is_checked_and_recorded_after_one_fails(judged):
    verdicts, _ = judged
    v = verdicts["rows_of_96"]
    assert not v.correct and v.failure == "runtime_error" and v.cause == "shape_specialisation", v.message
    assert v.message.startswith("[small_") and v.protocol == "kbench"
    default, *variants, evald = v.configs
    assert default["kind"] == "default" and default["passed"] and default["tol_needed"] <= 1e-4
    # an elementwise reference does not depend on training: the eval configuration follows the default
    assert evald["kind"] == "eval" and evald["follows"] == default["config"] and not evald["checked"] and "training" in evald["reason"]
    assert len(variants) >= 2 and all(c["checked"] for c in variants)  # checked on after the first variant failed
    assert all(c["failure"] == "runtime_error" and c["message"].startswith(f"[{c['config']}]") for c in variants)
    assert v.variants_checked == len(variants)
    assert v.runtime_ms is not None  # the declared shape passed: timed, so other protocols can read it
    honest = verdicts["honest"]
    assert honest.correct and honest.cause is None and all(c["passed"] for c in honest.configs if not c["follows"])


def test_errors_over_the_fp32_tolerance_carry_what_they_need_and_their_cause(judged):
    verdicts, _ = judged
    half, tf32 = verdicts["half"], verdicts["tf32"]
    assert half.failure == "output_mismatch" and half.cause == "output_mismatch", half.message
    need = half.configs[0]["tol_needed"]
    assert 1e-4 < need < 1e-2 and half.configs[0]["ref_tf32_tol"] == 0.0
    assert "elements outside atol=rtol=0.0001" in half.message
    assert tf32.failure == "output_mismatch" and tf32.cause == "reduced_precision", tf32.message
    assert all(c["ref_tf32_tol"] and c["tol_needed"] <= protocols.ENVELOPE * c["ref_tf32_tol"] for c in tf32.configs if not c["follows"])
    assert "reduced precision" in tf32.message


def test_records_judged_once_read_under_every_protocol(judged):
    _, df = judged
    assert set(df["protocol"]) == {"kbench"}
    by = {p: metrics.under_protocol(df, p).set_index("model") for p in protocols.PROTOCOLS}
    assert by["kbench"]["correct"].to_dict() == {"honest": True, "rows_of_96": False, "half": False, "tf32": False}
    assert by["kernelbench"]["correct"].to_dict() == {"honest": True, "rows_of_96": True, "half": False, "tf32": False}
    assert by["kernelbench-v0"]["correct"].to_dict() == {"honest": True, "rows_of_96": True, "half": True, "tf32": True}
    assert by["kbench"].loc["tf32", "cause"] == "reduced_precision" and pd.isna(by["kernelbench"].loc["rows_of_96", "cause"])
    assert set(by["kernelbench-v0"]["protocol"]) == {"kernelbench-v0"}
    gap = metrics.protocol_gap(df, by=())
    assert gap.to_dict("records") == [{"output_mismatch": 1, "reduced_precision": 1, "shape_specialisation": 1}]
    table = metrics.protocol_summary(df, by=("run_id",))
    assert list(table["protocol"]) == list(protocols.PROTOCOLS)
    # problems weigh alike: relu 1/3, 2/3, 3/3, 3/3; matmul 0, 0, 1, 1 (cuda-l1 reads these forward, mode-free tasks as v0 does)
    assert list(table["correct"].round(3)) == [0.167, 0.333, 1.0, 1.0]


def test_records_written_before_protocols_read_as_judged_under_kbench(judged):
    _, df = judged
    old = df.assign(configs=None, protocol=None, cause=None)
    for p in protocols.PROTOCOLS:
        read = metrics.under_protocol(old, p)
        assert read["correct"].tolist() == df["correct"].tolist() and read["failure"].tolist() == df["failure"].tolist()
        assert read["cause"].tolist() == [None if f is None else f for f in df["failure"]]
    assert metrics.under_protocol(pd.DataFrame(), "kbench").empty


def test_the_protocol_decides_correct_at_judging_time(judged):
    from kbench_lib.judging.pipeline import JudgeOptions

    opts = JudgeOptions(device="cpu", timing=False, run_timeout_s=60, protocol="kernelbench")
    relu = load_problem(FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    v = judge(relu, load_candidate(PROTO / "scale_add_relu_rows_of_96.py"), opts)
    assert v.correct and v.protocol == "kernelbench" and v.failure is None
    assert [c["passed"] for c in v.configs][1:] == [False] * (len(v.configs) - 1)  # still checked and recorded
    v = judge(relu, load_candidate(PROTO / "scale_add_relu_half.py"), replace(opts, protocol="kernelbench-v0"))
    assert v.correct and v.configs[0]["passed"] and v.configs[0]["tol_needed"] > 1e-4


def test_eval_json_shows_the_configurations_and_an_unknown_protocol_is_one_line():
    cmd = [sys.executable, "-m", "kbench_lib.cli", "eval", str(FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py"),
           str(PROTO / "scale_add_relu_rows_of_96.py"), "--device", "cpu", "--no-timing", "--protocol", "kernelbench", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    d = json.loads(out.stdout.strip().splitlines()[-1])
    assert d["correct"] and d["protocol"] == "kernelbench" and d["variants_checked"] >= 2
    assert {"config", "kind", "passed", "failure", "max_abs_err", "tol_needed"} <= set(d["configs"][0])
    bad = subprocess.run(cmd[:-3] + ["--protocol", "upstream"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert bad.returncode == 2 and "choose one of kbench, kernelbench, kernelbench-v0" in bad.stderr
    assert len([line for line in bad.stderr.splitlines() if "error" in line]) == 1


@pytest.mark.gpu
def test_on_a_gpu_tf32_is_reduced_precision_and_a_fault_on_a_variant_stops_the_checks_after_it():
    """Full size on CUDA: a Triton GEMM with TF32 tl.dot fails kbench and kernelbench as reduced
    precision (the reference's own error measured with cuBLAS's TF32) and passes kernelbench-v0; its
    IEEE twin passes everywhere. A kernel that faults on a variant leaves the declared shape passed,
    that variant failed, and the one after it not checked."""
    import torch

    from kbench_lib.judging.pipeline import JudgeOptions

    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    opts = JudgeOptions(device="cuda", timing=False)
    agent = REPO / "benchmarks" / "fixtures" / "agent_style"
    gemm = load_problem(REPO / "problems" / "level1" / "2_Rectangular_Matmul.py")
    v = judge(gemm, load_candidate(agent / "2_Rectangular_Matmul__tf32_dot.py"), opts)
    assert v.failure == "output_mismatch" and v.cause == "reduced_precision", v.message
    d = v.configs[0]
    assert d["ref_tf32_tol"] and 1e-4 < d["tol_needed"] <= protocols.ENVELOPE * d["ref_tf32_tol"] and d["tol_needed"] < 1e-2
    honest = judge(gemm, load_candidate(agent / "2_Rectangular_Matmul__ieee_dot.py"), opts)
    assert honest.correct and not honest.flags and all(c["passed"] for c in honest.configs if not c["follows"]), honest.message
    gelu = load_problem(REPO / "problems" / "level1" / "54_GELU_Exact.py")
    v = judge(gelu, load_candidate(PROTO / "gelu_faults_off_its_shape.py"), opts)
    default, first, *rest = [c for c in v.configs if c["kind"] != "eval"]
    assert default["passed"] and first["failure"] == "runtime_error" and first["message"].startswith(f"[{first['config']}]")
    assert v.cause == "shape_specialisation" and rest and all(not c["checked"] and "CUDA context" in c["reason"] for c in rest)
    assert protocols.decide(v.configs, "fp32", "kernelbench")["correct"]


def test_the_protocol_figure_draws_the_three_protocols_and_the_gap_by_cause(judged, tmp_path):
    import matplotlib.pyplot as plt

    from kbench_lib import workflows
    from kbench_lib.reports import plots

    _, df = judged
    fig = plots.protocol_plot(df)
    names = [[t.get_text() for t in legend.get_texts()] for legend in fig.legends]
    assert names == [list(protocols.PROTOCOLS), ["output_mismatch", "reduced_precision", "shape_specialisation"]]
    assert "x86_64" in fig._suptitle.get_text()
    plt.close(fig)
    made = workflows.figures(df, tmp_path)
    assert {p.suffix for p in made["protocols"]} == {".pdf", ".png"} and all(p.exists() for p in made["protocols"])


def test_a_configuration_failure_keeps_the_workers_output(tmp_path):
    """What the candidate's process printed stays beside a verdict decided by its configurations."""
    from kbench_lib.judging.pipeline import JudgeOptions

    src = (PROTO / "scale_add_relu_rows_of_96.py").read_text().replace(
        "        rows = ", "        print('hello from the candidate', flush=True)\n        rows = ")
    (tmp_path / "noisy.py").write_text(src)
    relu = load_problem(FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    v = judge(relu, load_candidate(tmp_path / "noisy.py"), JudgeOptions(device="cpu", timing=False, run_timeout_s=60))
    assert v.failure == "runtime_error" and v.cause == "shape_specialisation"
    assert v.error and "hello from the candidate" in v.error


def test_no_protocol_gap_has_the_shape_of_a_gap(judged):
    """Rows that the two protocols read alike: no gap rows, but the groups' index and the causes'
    columns named as a gap's are (a reader's ``gap.columns``, ``gap.reset_index()`` work on both)."""
    _, df = judged
    gap = metrics.protocol_gap(df, by=("model",))
    assert gap.columns.name == "cause" and len(gap) == 3
    honest = df[df["model"] == "honest"]
    none = metrics.protocol_gap(honest, by=("model",))
    assert len(none) == 0 and none.index.name == "model" and none.columns.name == "cause"
    assert list(none.reset_index().columns) == ["model"]
    assert metrics.protocol_gap(honest, by=()).columns.name == "cause" == metrics.protocol_gap(df, by=()).columns.name
    two = metrics.protocol_gap(honest, by=("model", "level"))
    assert list(two.index.names) == ["model", "level"] and len(two) == 0
