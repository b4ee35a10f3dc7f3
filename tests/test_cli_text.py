"""kbench eval's human-readable lines: honest about timings and about what correctness covered."""
from kbench_lib.cli.eval_command import timing_kind
from kbench_lib.judging.pipeline import Verdict
from kbench_lib.reports.verdict_text import checks_line, verdict_lines


def _verdict(**kw):
    base = dict(problem="level1/1_Scale_Add_ReLU", level="level1", backend="triton", device="cpu", device_name="x86_64",
                precision="fp32", correct=True, small=True, seeds_checked=5, variants_checked=2, max_abs_err=0.0,
                runtime_ms=40.0, baseline_ms=0.01, speedup=0.00025)
    base.update(kw)
    return Verdict(**base)


class _Cand:
    backend = "triton"


def test_interpreter_timing_is_labelled_not_a_speedup(scale_add_relu):
    v = _verdict()
    kind = timing_kind(v)
    assert kind == "triton_interpreter"
    text = "\n".join(verdict_lines(v, scale_add_relu, _Cand(), kind))
    assert "speedup 0" not in text and "no kernel speedup" in text and "interpreter" in text
    gpu = _verdict(device="cuda", small=False, runtime_ms=0.1, baseline_ms=0.2, speedup=2.0)
    assert "speedup 2x" in "\n".join(verdict_lines(gpu, scale_add_relu, _Cand(), timing_kind(gpu)))


def test_checks_line_says_what_was_checked(scale_add_relu):
    assert "5 input sets of the SMALL configuration and 2 of its 2 shape variants" in checks_line(_verdict(), scale_add_relu)
    full = checks_line(_verdict(small=False, variants_checked=2), scale_add_relu)
    assert "full-size configuration and 2 of its 2 shape variants" in full
    no_small = scale_add_relu.__class__(**{**scale_add_relu.__dict__, "small_variants": ()})
    assert "full-size only" in checks_line(_verdict(variants_checked=0), no_small)
    from kbench_lib.judging.config_checks import new_config

    configs = [{**new_config("small", "default"), "checked": True, "passed": True, "tol_needed": 0.0, "max_abs_err": 0.0},
               {**new_config("small_variant0", "declared"), "checked": True, "failure": "runtime_error", "hard_failure": "runtime_error"},
               {**new_config("small_variant1", "declared"), "reason": "the CUDA context was unusable after small_variant0 failed"}]
    failed = _verdict(correct=False, failure="runtime_error", cause="shape_specialisation", seeds_checked=5, variants_checked=1,
                      runtime_ms=None, configs=configs)
    lines = verdict_lines(failed, scale_add_relu, _Cand(), "triton_interpreter")
    assert not any("checked 5" in line for line in lines) and "  cause: shape_specialisation" in lines
    assert lines[-4].startswith("  configurations (protocol kbench")
    assert "small " in lines[-3] and "passed  tol_needed 0" in lines[-3]
    assert "small_variant0" in lines[-2] and "runtime_error" in lines[-2]
    assert "not checked  (the CUDA context was unusable" in lines[-1]


def test_derived_variants_and_variant_timings_are_reported(scale_add_relu):
    no_small = scale_add_relu.__class__(**{**scale_add_relu.__dict__, "small_variants": ()})
    derived = _verdict(variants_derived=["small_derived0", "small_derived1"])
    assert "and 2 shape variants (0 declared, 2 derived" in checks_line(derived, no_small)
    timings = {"v1": {"runtime_ms": 0.1, "baseline_ms": 0.3, "speedup": 3.0}}
    gpu = _verdict(device="cuda", small=False, runtime_ms=0.1, baseline_ms=0.2, speedup=2.0, variant_timings=timings)
    assert "    on v1: runtime 0.1000 ms   eager 0.3000 ms   speedup 3x" in verdict_lines(gpu, scale_add_relu, _Cand(), timing_kind(gpu))
    cpu = _verdict(variant_timings=timings)  # interpreter times: no speedup shown
    assert "    on v1: runtime 0.1000 ms   eager 0.3000 ms" in verdict_lines(cpu, scale_add_relu, _Cand(), timing_kind(cpu))


def test_eval_takes_a_problem_key_as_the_lab_does(tmp_path):
    import json
    import subprocess
    import sys

    from conftest import REPO

    cand = tmp_path / "relu.py"
    cand.write_text("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                    "        return torch.relu(x)\n")
    cmd = [sys.executable, "-m", "kbench_lib.cli", "eval", "level1/51_ReLU", str(cand), "--device", "cpu", "--no-timing", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1])["problem"] == "level1/51_ReLU"
    bad = subprocess.run([*cmd[:4], "level9/none", *cmd[5:]], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert bad.returncode == 2 and bad.stderr.strip() == f"kbench eval: no problem 'level9/none' under {REPO / 'problems'}"


def test_an_unknown_model_is_one_line_not_a_traceback(tmp_path):
    import subprocess
    import sys

    from conftest import REPO

    out = subprocess.run([sys.executable, "-m", "kbench_lib.cli", "run", "--model", "bogus", "--device", "cpu", "--runs-root", str(tmp_path)],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and out.stderr.startswith("kbench run: unknown model 'bogus': use ")
    assert not any(tmp_path.iterdir())  # nothing started
