"""The CLI contract (docs/RECORDS.md, kbench eval --json) and batches that survive bad input."""
import json
import subprocess
import sys

import pytest

from kbench_lib.judging.pipeline import JudgeOptions
from kbench_lib.suite.problems import discover_with_errors
from kbench_lib.scoring.records import read_records
from kbench_lib.batch.runner import run_batch

pytestmark = pytest.mark.slow
CONTRACT = {"problem", "correct", "failure", "flags", "runtime_ms", "baseline_ms", "speedup", "max_abs_err", "seeds_checked", "variants_checked"}


def _kbench(*args):
    r = subprocess.run([sys.executable, "-m", "kbench_lib.cli", *args], capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout, r.stderr


def test_eval_json_correct_and_wrong(fixtures):
    prob = str(fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    code, out, err = _kbench("eval", prob, str(fixtures / "candidates" / "scale_add_relu_triton.py"), "--backend", "triton",
                             "--device", "cpu", "--json", "--timing-budget", "0.2")
    assert code == 0, err
    v = json.loads(out.strip().splitlines()[-1])
    assert CONTRACT <= set(v)
    assert v["correct"] is True and v["flags"] == [] and v["failure"] is None
    assert v["runtime_ms"] > 0 and v["speedup"] is None and v["timing"] == "triton_interpreter"  # an interpreter's time is no speedup
    code, out, _ = _kbench("eval", prob, str(fixtures / "candidates" / "scale_add_relu_wrong.py"), "--device", "cpu", "--json", "--no-timing")
    v = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and v["correct"] is False and v["failure"] == "output_mismatch"


def test_eval_exit_status_when_the_judge_cannot_run(fixtures, tmp_path):
    cand = str(fixtures / "candidates" / "scale_add_relu_wrong.py")
    code, _, err = _kbench("eval", str(tmp_path / "missing.py"), cand, "--device", "cpu")
    assert code != 0 and "cannot read" in err
    broken = tmp_path / "1_Broken.py"
    broken.write_text("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x.nope()\n"
                      "def get_inputs():\n    return [torch.randn(3)]\ndef get_init_inputs():\n    return []\n")
    code, _, err = _kbench("eval", str(broken), cand, "--device", "cpu")
    assert code == 3 and "reference model" in err


def test_batch_goes_on_and_records_everything(fixtures, tmp_path):
    probs = tmp_path / "problems" / "level1"
    probs.mkdir(parents=True)
    src = (fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py").read_text()
    (probs / "1_Scale_Add_ReLU.py").write_text(src)
    (probs / "2_Broken_Reference.py").write_text(src.replace("torch.relu(a * self.scale + b)", "a.nope()"))
    (probs / "3_Malformed.py").write_text("class Model(:\n")
    cands = tmp_path / "cands" / "level1"
    cands.mkdir(parents=True)
    (cands / "1_Scale_Add_ReLU.py").write_text((fixtures / "candidates" / "scale_add_relu_wrong.py").read_text())
    (cands / "1_Scale_Add_ReLU__b.py").write_text((fixtures / "bad_candidates" / "syntax_error.py").read_text())
    (cands / "1_Scale_Add_ReLU__c.py").write_text((fixtures / "bad_candidates" / "segfault.py").read_text())
    (cands / "2_Broken_Reference.py").write_text((fixtures / "candidates" / "scale_add_relu_wrong.py").read_text())
    problems, errors = discover_with_errors(tmp_path / "problems")
    assert len(errors) == 1
    opts = JudgeOptions(device="cpu", timing=False)
    run_id, rows = run_batch(problems, f"folder:{tmp_path / 'cands'}", run_id="t1", runs_root=tmp_path / "runs", opts=opts, progress=False)
    failures = sorted(r["failure"] for r in rows)
    assert failures == ["crash", "judge_error", "load_error", "output_mismatch"]
    df = read_records(tmp_path / "runs", "t1")
    assert len(df) == 4
    # resuming the same run judges nothing twice
    _, again = run_batch(problems, f"folder:{tmp_path / 'cands'}", run_id="t1", runs_root=tmp_path / "runs", opts=opts, progress=False)
    assert again == [] and len(read_records(tmp_path / "runs", "t1")) == 4


def test_torch_compile_model_source_is_a_valid_candidate(scale_add_relu):
    from kbench_lib.core.candidates import detect_backend
    from kbench_lib.generation.models import compile_source

    src = compile_source(scale_add_relu)
    compile(src, "c.py", "exec")
    assert "class ModelNew(Model)" in src and detect_backend(src) == "torch"


def test_the_eager_control_is_the_problems_own_model_judged_flagged_and_timed(scale_add_relu):
    """The ``eager`` model (the judge's clock control): the problem's Model as the candidate, correct,
    flagged as writing no kernel, and timed (its speedup over eager measures the clocks' bias)."""
    from kbench_lib.judging.pipeline import JudgeOptions, judge
    from kbench_lib.generation.models import NOTES, ROLES, get_model

    (sample,) = get_model("eager")(scale_add_relu)
    assert sample.candidate.backend == "torch" and "class ModelNew(Model):\n    pass" in sample.candidate.source
    v = judge(scale_add_relu, sample.candidate, JudgeOptions(device="cpu", small=True, timing_budget_s=0.2))
    assert v.correct and v.failure is None
    assert any(str(f).startswith("library_passthrough") for f in v.flags)
    assert v.runtime_ms and v.runtime_ms > 0 and v.baseline_ms > 0 and v.speedup is None  # CPU times: runtimes, no speedup
    assert "eager" in ROLES and "eager" in NOTES


def test_kbench_run_says_why_the_eager_control_has_no_trusted_verdict(fixtures, tmp_path):
    code, out, err = _kbench("run", str(fixtures / "problems"), "--model", "eager", "--filter", "1_Scale_Add_ReLU", "--device", "cpu",
                             "--runs-root", str(tmp_path), "--timing-budget", "0.2", "--quiet")
    assert code == 0, err
    assert "1 verdicts written, 0 correct and unflagged" in out and "eager is a control, not a kernel author" in out


def test_candidates_a_device_cannot_run_are_listed_as_skipped():
    from kbench_lib.workflows import unrunnable

    from kbench_lib.core import dsl_packages

    cpu = unrunnable(None, "reference", "cpu")
    assert cpu and {b for _, b in cpu} == {"cuda", "cute", "tilelang"}  # the GPU solutions, on a machine without a GPU
    missing = {b for b in dsl_packages.DSL_BACKENDS if not dsl_packages.installed(b)}  # the dsl extra is optional
    assert {b for _, b in unrunnable(None, "reference", "cuda")} == missing  # on a GPU: only DSL solutions without their package


def test_one_problems_samples_spread_over_two_judges_each_preparing_it_once(fixtures, tmp_path, monkeypatch):
    """Six samples of one problem on two judging threads (two "devices", here both the CPU): both
    judge some, each prepares the problem's reference once and lets it go when its last sample is
    judged; every sample is recorded once, as on one device."""
    import collections
    import threading

    from kbench_lib.batch import held_references, lanes, runner
    from kbench_lib.judging.pipeline import JudgeOptions
    from kbench_lib.suite.problems import discover
    from kbench_lib.scoring.records import read_records

    monkeypatch.setattr(runner, "batch_devices", lambda opts, gpus: ["cpu", "cpu"])
    monkeypatch.setattr(lanes, "SPLIT_AFTER", 1)
    prepared, released = collections.Counter(), collections.Counter()
    real_prepare, real_release = held_references.prepare_reference, held_references.release_reference

    def prepare(problem, device, opts, **kw):
        prepared[threading.get_ident()] += 1
        return real_prepare(problem, device, opts, **kw)

    def release(ref):
        released[threading.get_ident()] += 1
        return real_release(ref)

    monkeypatch.setattr(held_references, "prepare_reference", prepare)
    monkeypatch.setattr(held_references, "release_reference", release)
    probs = tmp_path / "problems" / "level1"
    probs.mkdir(parents=True)
    (probs / "1_Scale_Add_ReLU.py").write_text((fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py").read_text())
    cands = tmp_path / "cands" / "level1"
    cands.mkdir(parents=True)
    for i in range(6):
        good = (fixtures / "candidates" / "scale_add_relu_wrong.py").read_text()
        (cands / f"1_Scale_Add_ReLU__{i}.py").write_text(good + f"\n# sample {i}\n")
    opts = JudgeOptions(device="cpu", timing=False)
    _, rows = runner.run_batch(discover(tmp_path / "problems"), f"folder:{tmp_path / 'cands'}", run_id="split",
                               runs_root=tmp_path / "runs", opts=opts, progress=False, gpus=2)
    assert sorted(r["sample"] for r in rows) == list(range(6))
    assert all(r["failure"] == "output_mismatch" for r in rows), [(r["failure"], (r["message"] or r["error"] or "")[-400:]) for r in rows]
    assert len(read_records(tmp_path / "runs", "split")) == 6
    assert sorted(prepared.values()) == [1, 1] and released == prepared, (prepared, released)


@pytest.mark.parametrize("args, words", [
    (["no/such/folder"], "no such problem folder or file: no/such/folder"),
    (["{problems}", "--filter", "NoSuchProblemAnywhere"], "matches --filter NoSuchProblemAnywhere"),
])
def test_kbench_run_with_nothing_to_run_is_one_line(fixtures, tmp_path, args, words):
    args = [x.format(problems=fixtures / "problems") for x in args]
    code, out, err = _kbench("run", *args, "--model", "reference", "--device", "cpu", "--runs-root", str(tmp_path))
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not any(tmp_path.iterdir())  # nothing started, nothing written
