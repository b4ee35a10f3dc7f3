"""End to end on the CPU: real builds, real isolated processes, every failure category."""
import pytest

from kbench_lib.core.candidates import load_candidate
from kbench_lib.judging import build_job, timed, worker_reports
from kbench_lib.judging.pipeline import judge

pytestmark = pytest.mark.slow


def _judge(problem, fixtures, name, opts, folder="bad_candidates"):
    return judge(problem, load_candidate(fixtures / folder / name), opts)


def test_correct_cpp_candidate_builds_once_and_passes(scale_add_relu, fixtures, fast_cpu_opts, tmp_path, monkeypatch):
    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))  # its own cache: other tests of the session build this source too
    v = _judge(scale_add_relu, fixtures, "scale_add_relu_cpp.py", fast_cpu_opts, "candidates")
    assert v.correct and v.failure is None and v.flags == [], v.message
    assert v.backend == "cpp" and v.compiled and not v.build_cached
    assert v.seeds_checked == 5 and v.variants_checked == 2
    assert v.runtime_ms > 0 and v.baseline_ms > 0 and v.speedup is None and v.speedup_compile is None  # a CPU time is no kernel speedup
    assert v.max_abs_err == 0.0
    assert v.build_log is not None  # compiler output is captured (empty for a silent build), never printed
    # the worker's start and the timing stage in their parts, each within its stage
    start = {k: v.stage_s[f"run_start.{k}"] for k in ("context", "draw", "imports", "threads")}
    assert all(x >= 0 for x in start.values()) and sum(start.values()) <= v.stage_s["run_start"] + 0.01
    assert v.stage_s["run_timing.trials"] > 0 and v.stage_s["run_timing.trials"] <= v.stage_s["run_timing"]
    again = _judge(scale_add_relu, fixtures, "scale_add_relu_cpp.py", fast_cpu_opts, "candidates")
    assert again.correct and again.build_cached and again.build_s == 0.0


def test_correct_triton_candidate_through_the_interpreter(scale_add_relu, fixtures, fast_cpu_opts):
    pytest.importorskip("triton")
    v = _judge(scale_add_relu, fixtures, "scale_add_relu_triton.py", fast_cpu_opts, "candidates")
    assert v.backend == "triton"
    assert v.correct and v.flags == [], v.message


def test_wrong_candidate_names_the_failure(scale_add_relu, fixtures, fast_cpu_opts):
    v = _judge(scale_add_relu, fixtures, "scale_add_relu_wrong.py", fast_cpu_opts, "candidates")
    assert not v.correct and v.failure == "output_mismatch"
    assert "elements outside" in v.message and v.runtime_ms is None


@pytest.mark.parametrize(
    "name, failure, words",
    [
        ("syntax_error.py", "load_error", "syntax error"),
        ("no_modelnew.py", "load_error", "no class ModelNew"),
        ("wrong_signature.py", "load_error", "ModelNew(*init_inputs)"),
        ("raises.py", "runtime_error", "on purpose"),
        ("wrong_shape.py", "shape_mismatch", "expected shape"),
        ("wrong_dtype.py", "dtype_mismatch", "float64"),
        ("nan_output.py", "nonfinite", "non-finite"),
        ("not_a_tensor.py", "output_mismatch", "not a torch.Tensor"),
        ("mutates_input.py", "input_mutated", "modified in place"),
        ("segfault.py", "crash", "SIGSEGV"),
        ("exit_zero.py", "crash", "without reporting"),
        ("sys_exit.py", "crash", "sys.exit"),
        ("compile_error_cpp.py", "compile_error", "error"),
    ],
)
def test_bad_candidates_get_a_clear_category(scale_add_relu, fixtures, fast_cpu_opts, name, failure, words):
    v = _judge(scale_add_relu, fixtures, name, fast_cpu_opts)
    assert not v.correct
    assert v.failure == failure, (v.failure, v.message)
    assert words in (v.message or "") + (v.error or ""), v.message


def test_failure_message_starts_at_the_candidates_frames(scale_add_relu, fixtures, fast_cpu_opts):
    """The traceback in the verdict (and so in records and the CLI) begins in the candidate's file."""
    v = _judge(scale_add_relu, fixtures, "raises.py", fast_cpu_opts)
    lines = v.message.splitlines()
    # the failing configuration first (every failure message names it), then the candidate's frames
    assert lines[0] == "[small] Traceback (most recent call last):" and "frames of the harness hidden" in lines[1]
    assert lines[2].startswith('  File "candidate.py", line 6, in forward'), v.message
    assert "isolation/worker/" not in v.message and lines[-1] == "ValueError: kernel launch failed on purpose"


def test_hang_times_out(scale_add_relu, fixtures, fast_cpu_opts):
    fast_cpu_opts.run_timeout_s = 8
    v = _judge(scale_add_relu, fixtures, "hang.py", fast_cpu_opts)
    assert v.failure == "timeout" and "8 s" in v.message and "correctness" in v.message


def test_build_that_never_ends(scale_add_relu, fixtures, fast_cpu_opts):
    fast_cpu_opts.build_timeout_s = 5
    v = _judge(scale_add_relu, fixtures, "build_hang.py", fast_cpu_opts)
    assert v.failure == "compile_error" and "5 s" in v.message and not v.compiled


def test_a_build_that_sleeps_ends_at_the_idle_limit(scale_add_relu, fixtures, fast_cpu_opts):
    """A build that uses no CPU (a candidate sleeping at import) is ended at the idle limit, not its
    whole build limit: no other judge held the build folder, so it waited on nothing."""
    fast_cpu_opts.build_timeout_s, fast_cpu_opts.idle_timeout_s = 120, 3
    v = _judge(scale_add_relu, fixtures, "build_hang.py", fast_cpu_opts)
    assert v.failure == "compile_error" and "sat idle" in v.message and not v.compiled, v.message
    assert v.build_s < 60


def test_a_batch_builds_a_failing_candidate_once(scale_add_relu, fixtures, fast_cpu_opts, tmp_path, monkeypatch):
    """A build the batch tried ahead and that failed at its limit (not remembered in the cache) is
    the verdict: the judge does not build it a second time, which would take the limit again."""
    from kbench_lib.batch import local_batch, runner
    from kbench_lib.judging import pipeline as judge_mod

    calls = []
    real = judge_mod.build_candidate

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(judge_mod, "build_candidate", counted)
    monkeypatch.setattr(runner, "build_candidate", counted)
    monkeypatch.setattr(local_batch, "build_candidate", counted)
    folder = tmp_path / "cands"
    folder.mkdir()
    (folder / f"{scale_add_relu.path.stem}__hang.py").write_text((fixtures / "bad_candidates" / "build_hang.py").read_text())
    fast_cpu_opts.build_timeout_s, fast_cpu_opts.idle_timeout_s = 4, 0
    _, rows = runner.run_batch([scale_add_relu], f"folder:{folder}", run_id="once", runs_root=tmp_path / "runs", opts=fast_cpu_opts,
                            progress=False, prebuild_jobs=2)
    assert len(rows) == 1 and rows[0]["failure"] == "compile_error" and "4 s" in (rows[0]["message"] or ""), rows[0]
    assert len(calls) == 1


def test_flood_of_output_is_bounded(scale_add_relu, fixtures, fast_cpu_opts):
    v = _judge(scale_add_relu, fixtures, "floods_output.py", fast_cpu_opts)
    assert v.correct and v.error is None


def test_no_secret_reaches_the_candidate(scale_add_relu, fixtures, fast_cpu_opts, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    monkeypatch.setenv("HF_TOKEN", "hf-test-not-real")
    v = _judge(scale_add_relu, fixtures, "reads_secrets.py", fast_cpu_opts)
    assert v.correct, v.message


def test_seeds_are_fresh_unless_fixed(scale_add_relu, fixtures, fast_cpu_opts):
    fast_cpu_opts.timing = False
    a = _judge(scale_add_relu, fixtures, "scale_add_relu_wrong.py", fast_cpu_opts, "candidates")
    b = _judge(scale_add_relu, fixtures, "scale_add_relu_wrong.py", fast_cpu_opts, "candidates")
    assert a.seed != b.seed
    fast_cpu_opts.seed = 1234
    c = _judge(scale_add_relu, fixtures, "scale_add_relu_wrong.py", fast_cpu_opts, "candidates")
    assert c.seed == 1234


def test_library_passthrough_is_flagged_by_what_ran(fixtures, fast_cpu_opts):
    from kbench_lib.core.candidates import Candidate
    from kbench_lib.suite.problems import load_problem

    problem = load_problem(fixtures / "problems" / "level1" / "2_Linear_GELU.py")
    same = (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
        "class ModelNew(nn.Module):\n"
        "    def __init__(self, i, o):\n        super().__init__()\n        self.linear = nn.Linear(i, o)\n"
        "    def forward(self, x):\n        return F.gelu(torch.addmm(self.linear.bias, x, self.linear.weight.t()))\n"
    )
    v = judge(problem, Candidate(same, "torch"), fast_cpu_opts)
    assert v.correct and any(f.startswith("library_passthrough") for f in v.flags), v.flags
    # keeping the library GEMM and computing the epilogue differently is not a passthrough
    own = same.replace("return F.gelu(torch.addmm(self.linear.bias, x, self.linear.weight.t()))",
                       "y = torch.addmm(self.linear.bias, x, self.linear.weight.t())\n        return 0.5 * y * (1 + torch.erf(y * 0.7071067811865476))")
    v = judge(problem, Candidate(own, "torch"), fast_cpu_opts)
    assert v.correct and v.flags == [], (v.message, v.flags)


def test_the_profile_is_of_a_call_after_the_first(fixtures, fast_cpu_opts):
    """A model's first call may do one-time work (warm-up iterations before a CUDA-graph capture,
    cuDNN's benchmark search, a compile): the profile is of a later call, the work the timer sees,
    so its ops are one call's and its size does not grow with the warm-up."""
    from kbench_lib.core.candidates import Candidate
    from kbench_lib.suite.problems import load_problem

    problem = load_problem(fixtures / "problems" / "level1" / "2_Linear_GELU.py")
    warming = (
        "import torch\nimport torch.nn as nn\n"
        "class ModelNew(nn.Module):\n"
        "    def __init__(self, i, o):\n        super().__init__()\n        self.linear = nn.Linear(i, o)\n        self.warm = False\n"
        "    def forward(self, x):\n"
        "        if not self.warm:\n"
        "            for _ in range(5):\n                torch.addmm(self.linear.bias, x, self.linear.weight.t())\n"
        "            self.warm = True\n"
        "        y = torch.addmm(self.linear.bias, x, self.linear.weight.t())\n"
        "        return 0.5 * y * (1 + torch.erf(y * 0.7071067811865476))\n"
    )
    v = judge(problem, Candidate(warming, "torch"), fast_cpu_opts)
    assert v.correct and v.flags == [], (v.message, v.flags)
    assert v.profile_ops.get("aten::addmm") == 1, v.profile_ops


def test_a_verdict_judged_with_the_guards_off_never_counts(fixtures, fast_cpu_opts):
    """``JudgeOptions(guards=False)`` (what the guard-cost benchmark compares against) checks
    correctness only: a passthrough the guards flag is correct with the one flag ``guards_off``,
    which no trust policy counts."""
    from dataclasses import replace

    from kbench_lib.core.candidates import Candidate
    from kbench_lib.scoring.flags import trusted
    from kbench_lib.suite.problems import load_problem

    problem = load_problem(fixtures / "problems" / "level1" / "2_Linear_GELU.py")
    same = (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
        "class ModelNew(nn.Module):\n"
        "    def __init__(self, i, o):\n        super().__init__()\n        self.linear = nn.Linear(i, o)\n"
        "    def forward(self, x):\n        return F.gelu(self.linear(x))\n"
    )
    v = judge(problem, Candidate(same, "torch"), replace(fast_cpu_opts, guards=False))
    assert v.correct and [f.split(":")[0] for f in v.flags] == ["guards_off"], v.flags
    assert not trusted(v.correct, v.flags, "strict") and not trusted(v.correct, v.flags, "no-cheat")


def test_job_folders_of_dead_judges_are_removed(tmp_path):
    import os
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    orphan = tmp_path / f"kbench-job-{dead}-abc"
    (orphan / "out").mkdir(parents=True)
    mine = tmp_path / f"kbench-job-{os.getpid()}-def"
    mine.mkdir()
    other = tmp_path / "unrelated-1234-x"
    other.mkdir()
    build_job._remove_orphans(str(tmp_path))
    assert not orphan.exists() and mine.exists() and other.exists()


def test_a_failed_run_still_reports_what_the_candidate_left_behind(scale_add_relu, fixtures, fast_cpu_opts):
    v = _judge(scale_add_relu, fixtures, "thread_then_fails_in_timing.py", fast_cpu_opts)
    assert not v.correct and v.failure == "oom" and "while timing" in v.message, (v.failure, v.message[-300:])
    assert any(f.startswith("threads_started") for f in v.flags), v.flags


def test_a_compile_error_is_remembered_not_compiled_again(scale_add_relu, fixtures, fast_cpu_opts):
    from kbench_lib.core.candidates import Candidate

    broken = load_candidate(fixtures / "bad_candidates" / "compile_error_cpp.py")
    fresh = Candidate(broken.source + "\n# a source no other test has built\n", broken.backend)
    first = judge(scale_add_relu, fresh, fast_cpu_opts)
    again = judge(scale_add_relu, fresh, fast_cpu_opts)
    assert first.failure == again.failure == "compile_error" and not again.compiled
    assert again.build_cached and not first.build_cached
    assert again.message == first.message and "error" in again.message and again.build_log == first.build_log


@pytest.mark.parametrize("how", ["rename", "remove"])
def test_a_candidate_that_swaps_out_for_a_symlink_fails_and_writes_nothing_there(scale_add_relu, fast_cpu_opts, tmp_path, how):
    """The candidate's import replaces the job's ``out`` folder with a symlink to a folder of its
    choosing: no result file may land there (the judge's and the harness's files are made relative
    to the folder opened before the candidate ran) and the verdict is a failure, not an exception."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    from kbench_lib.core.candidates import Candidate

    # /dev/shm: writable inside the sandbox (its mounts are read-only elsewhere), and not removed with the job
    shm = os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK)
    target = Path(tempfile.mkdtemp(prefix="kbench-test-elsewhere-", dir="/dev/shm" if shm else str(tmp_path)))
    move = "os.rename(out, out + '_moved')" if how == "rename" else "os.rmdir(out)"
    source = (
        "import os\nimport torch\n"
        f"out = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'out')\nif os.path.isdir(out):\n    {move}\nos.symlink({str(target)!r}, out)\n"
        "class ModelNew(torch.nn.Module):\n"
        "    def __init__(self, scale):\n        super().__init__()\n        self.scale = scale\n"
        "    def forward(self, a, b):\n        return torch.relu(a * self.scale + b)\n"
    )
    try:
        v = judge(scale_add_relu, Candidate(source, "torch"), fast_cpu_opts)
        assert list(target.iterdir()) == []
        assert not v.correct and v.failure in ("crash", "runtime_error"), (v.failure, v.message)
    finally:
        shutil.rmtree(target, ignore_errors=True)


def test_preallocation_never_follows_a_swapped_out_folder(tmp_path, monkeypatch):
    """The judge's preallocation threads (CUDA runs) create files in the folder it opened, never
    through a symlink put in its place; files left in a folder moved out of the job are removed."""
    import os
    from types import SimpleNamespace

    import torch

    from kbench_lib.judging import pipeline as judge_mod
    from kbench_lib.measure import tensorfile
    from kbench_lib.judging import outputs

    monkeypatch.setattr(outputs, "PREALLOCATE_MIN", 0)  # read where _preallocate_outputs lives
    wd, target = tmp_path / "job", tmp_path / "elsewhere"
    wd.mkdir()
    target.mkdir()
    out = judge_mod._OutDir(wd)
    os.rename(wd / "out", tmp_path / "moved")
    os.symlink(target, wd / "out")
    case = SimpleNamespace(expected=[torch.ones(1000)], expected_input_grads=[], expected_param_grads={})
    prep = SimpleNamespace(device="cuda", cases=[case, case], timed=[False, False], timing_groups=[])
    allocating = judge_mod._preallocate_outputs(out, prep, judge_mod.JudgeOptions(timing=False))
    for t in allocating._threads:
        t.join()  # every file made (stop() would skip what is left)
    assert list(target.iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "moved").iterdir()) == ["case_0.kbt", "case_1.kbt"]
    with pytest.raises(tensorfile.TensorFileError, match="replaced"):
        out.read("case_0.kbt")
    out.close(allocating.names)
    assert list((tmp_path / "moved").iterdir()) == [] and list(target.iterdir()) == []


def _forged_verdict():
    from kbench_lib.judging.pipeline import Verdict

    return Verdict(problem="p", level="level1", backend="cpp", device="cpu", device_name="cpu", precision="fp32")


def test_a_forged_profile_message_is_flagged_and_still_makes_a_record():
    """profile_kernels and the other profile fields come from the candidate's process: malformed
    entries are dropped and flagged, and the verdict's record still converts to the records' schema."""
    from types import SimpleNamespace

    import pyarrow as pa

    from kbench_lib.scoring import records
    from kbench_lib.judging import pipeline as judge_mod
    from kbench_lib.core.candidates import Candidate

    prof = {"ops": {"aten::mm": 1 << 40, "aten::add": "x", 3: 1}, "n_kernels": 1 << 40, "custom_kernel_share": "half",
            "top_kernels": [["k", 0.5], [1, 2]],
            "kernels": [{"name": 3, "op": None, "count": 1, "device_us": 1.0}, {"name": "big", "op": None, "count": 1 << 40, "device_us": 2.0},
                        {"name": "ok", "op": "aten::mm", "count": 2, "device_us": float("nan")}, "not a row",
                        {"name": "fine", "op": None, "count": 2, "device_us": 3.0}]}
    res = SimpleNamespace(messages=[{"event": "profile", "profile": prof}])
    prep = SimpleNamespace(timed=[False, True], reference_profile=lambda: {"ops": {"aten::mm": 1}, "kernels": [], "n_kernels": None})
    v = _forged_verdict()
    judge_mod._check_profile(v, res, prep, Candidate("x", "cpp"), judge_mod.JudgeOptions(device="cpu"))
    assert any(f.startswith("profile_malformed") for f in v.flags), v.flags
    assert v.profile_kernels == [{"name": "big", "op": None, "count": worker_reports.INT32_MAX, "device_us": 2.0},
                                 {"name": "fine", "op": None, "count": 2, "device_us": 3.0}]
    assert v.profile_ops == {"aten::mm": worker_reports.INT32_MAX} and v.n_kernels == worker_reports.INT32_MAX
    assert v.custom_kernel_share is None and v.top_kernels == [["k", 0.5]]
    pa.Table.from_pylist([records.row_from_verdict(v, run_id="r", model="m")], schema=records.SCHEMA)
    padded = {"ops": {f"aten::op{i}": 1 for i in range(1001)}}  # real ops pushed past what is read
    for forged in ({"profile": "no"}, {"profile": {"kernels": {"name": 3}, "ops": [1], "top_kernels": 7}}, {"profile": padded}):
        v = _forged_verdict()
        judge_mod._check_profile(v, SimpleNamespace(messages=[{"event": "profile", **forged}]), prep, Candidate("x", "cpp"),
                                 judge_mod.JudgeOptions(device="cpu"))
        assert any(f.startswith("profile_malformed") for f in v.flags), v.flags
        pa.Table.from_pylist([records.row_from_verdict(v, run_id="r", model="m")], schema=records.SCHEMA)


def _replay_verdict(kernels: list[dict], ops: dict | None = None, backend: str = "cuda", ref_rows_extra: int = 0):
    """The verdict of a crafted profile against a reference of a GEMM and a GELU (and an op that
    launches no kernel), its kernel table padded with ``ref_rows_extra`` rows of other ops."""
    from types import SimpleNamespace

    from kbench_lib.judging import pipeline as judge_mod
    from kbench_lib.core.candidates import Candidate

    ref_kernels = [{"name": "gemm_k", "op": "aten::addmm", "count": 2, "device_us": 7.0},
                   {"name": "gelu_k", "op": "aten::gelu", "count": 1, "device_us": 2.0}]
    ref_kernels += [{"name": f"other_{i}", "op": "aten::cat", "count": 1, "device_us": 0.1} for i in range(ref_rows_extra)]
    ref = {"ops": {"aten::addmm": 1, "aten::gelu": 1, "aten::cudnn_is_acceptable": 1}, "kernels": ref_kernels, "n_kernels": 3}
    prep = SimpleNamespace(timed=[True], reference_profile=lambda: ref)
    total = sum(k["device_us"] for k in kernels)
    own = sum(k["device_us"] for k in kernels if k["op"] is None)
    prof = {"ops": ops or {}, "n_kernels": sum(k["count"] for k in kernels), "custom_kernel_share": own / total,
            "device_us": total, "top_kernels": [], "kernels": kernels}
    v = _forged_verdict()
    judge_mod._check_profile(v, SimpleNamespace(messages=[{"event": "profile", "profile": prof}]), prep, Candidate("x", backend),
                             judge_mod.JudgeOptions(device="cpu"))
    return v


def test_library_kernels_run_without_their_ops_are_still_the_librarys():
    """A CUDA-graph replay runs the kernels captured from library calls with no ATen op launching
    them: named as the reference's ops' kernels they count as the library's, and a candidate that
    replays every one of them (as often) is a library passthrough; a kernel of its own keeps its share."""
    replay = [{"name": "gemm_k", "op": None, "count": 2, "device_us": 8.0}, {"name": "gelu_k", "op": None, "count": 1, "device_us": 2.0}]
    v = _replay_verdict(replay)
    passthrough = [f for f in v.flags if f.startswith("library_passthrough")]
    assert passthrough and "aten::addmm, aten::gelu as the library's own kernels" in passthrough[0], v.flags
    assert v.custom_kernel_share == 0.0
    # its own GELU kernel replaced one op: no passthrough, and the GEMM's time is the library's
    fused = [replay[0], {"name": "my_gemm_epilogue", "op": None, "count": 1, "device_us": 2.0}]
    v = _replay_verdict(fused)
    assert not [f for f in v.flags if f.startswith("library_")], v.flags
    assert v.custom_kernel_share == pytest.approx(0.2)
    # the GEMM's kernel ran once where the reference's ran twice: not the reference's op
    v = _replay_verdict([{**replay[0], "count": 1}, replay[1]])
    assert not [f for f in v.flags if f.startswith("library_passthrough")], v.flags
    # a kernel of PyTorch's own, launched by no op and not the reference's, is the library's too
    v = _replay_verdict([replay[0], {"name": "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
                                     "op": None, "count": 1, "device_us": 2.0}])
    assert v.custom_kernel_share == 0.0 and any(f.startswith("library_does_the_work") for f in v.flags), v.flags
    # a reference table cut at its row limit cannot say the kernel-less op launched nothing
    from kbench_lib.measure import profiling
    v = _replay_verdict(replay, ref_rows_extra=profiling.MAX_KERNEL_ROWS)
    assert not [f for f in v.flags if f.startswith("library_passthrough")], v.flags
    # ops run as ops count as before
    v = _replay_verdict([{**replay[0], "op": "aten::addmm"}, {**replay[1], "op": "aten::gelu"}],
                        ops={"aten::addmm": 1, "aten::gelu": 1, "aten::cudnn_is_acceptable": 1})
    flag = [f for f in v.flags if f.startswith("library_passthrough")]
    assert flag and "CUDA-graph" not in flag[0], v.flags


def test_stage_parts_are_numbers_of_known_names_only():
    """The worker's split of its start and timing go into stage_s as numbers under known names; a
    forged report (any name, any value) adds nothing else."""
    from types import SimpleNamespace

    from kbench_lib.judging import pipeline as judge_mod

    v = _forged_verdict()
    res = SimpleNamespace(messages=[{"event": "stage", "stage": "load", "_t": 2.0,
                                     "parts": {"context": 0.25, "draw": "x", "imports": -1, "evil": 1.0, "threads": True}},
                                    {"event": "stage", "stage": "correctness", "_t": 3.0, "parts": {"context": 9.0}}])
    judge_mod._stage_times(v, 1.0, res, 4.0)
    assert v.stage_s == {"run_start": 1.0, "run_start.context": 0.25, "run_load": 1.0, "run_correctness": 1.0}


def test_forged_stage_and_failure_messages_end_as_failures():
    from types import SimpleNamespace

    from kbench_lib.judging import pipeline as judge_mod

    res = SimpleNamespace(messages=[{"event": "stage", "stage": "variant_timing"}], timed_out=False, signal_name=None, returncode=1, log="")
    v = worker_reports._died(_forged_verdict(), res, "run", 10)
    assert v.failure == "crash" and "variant_timing" in v.message
    res = SimpleNamespace(messages=[{"event": "failure", "flags": "abc", "message": 5}], timed_out=False, signal_name=None, returncode=0, log="")
    v = _forged_verdict()
    assert judge_mod._run_failed(v, res, SimpleNamespace(cases=[]), judge_mod.JudgeOptions(device="cpu"))
    assert v.failure == "crash" and v.flags == []


@pytest.mark.parametrize("median", [None, "fast", 0, -1.0, float("nan"), float("inf"), True])
def test_a_forged_median_is_a_crash(median):
    from types import SimpleNamespace

    from kbench_lib.judging import pipeline as judge_mod

    stats = {"median_ms": median, "n_trials": 10}
    res = SimpleNamespace(messages=[{"event": "timing", "timing": stats},
                                    {"event": "variant_timing", "config": "v", "timing": stats},
                                    {"event": "variant_timing", "config": ["unhashable"], "timing": stats}], log="")
    from kbench_lib.judging.config_checks import new_config

    v, default = _forged_verdict(), new_config("d", "default")
    assert not judge_mod._check_timed_outputs(v, res, SimpleNamespace(timing_groups=[("d", [0], [])]), None, judge_mod.JudgeOptions(), default)
    assert default["hard_failure"] == "crash" and "median_ms" in default["message"] and default["message"].startswith("[d]")
    v, variant = _forged_verdict(), {**new_config("v", "declared"), "checked": True}
    judge_mod._time_variants(v, res, SimpleNamespace(timed_variants=[("v", [1], [])]), None, judge_mod.JudgeOptions(), [variant])
    assert variant["hard_failure"] == "crash" and "median_ms" in variant["message"] and not v.variant_timings


@pytest.mark.parametrize("keys", [["-1", "0"], ["x", "0"], ["0", "2"], ["0"], ["0", "1", "2"]])
def test_timed_samples_must_be_exactly_the_groups_timed_sets(tmp_path, keys):
    """Sample keys are the candidate's process's: a negative or non-numeric index, a set of another
    timing group, or a set left out is a forged record (a crash), never a pass or an exception."""
    from types import SimpleNamespace

    import torch

    from kbench_lib.judging import pipeline as judge_mod
    from kbench_lib.measure import tensorfile
    from kbench_lib.measure.compare import fingerprint

    out = judge_mod._OutDir(tmp_path)
    good = [torch.ones(3)]
    tensorfile.write(str(tmp_path / "out" / "timing.kbt"),
                     {"samples": {k: good for k in keys}, "inputs_after": {"0": [], "1": []}})
    case = SimpleNamespace(expected=good, inputs=[])
    other = SimpleNamespace(expected=[torch.zeros(3)], inputs=[])
    prep = SimpleNamespace(device="cpu", precision="fp32", cases=[case, case, other], timed_case=lambda i, seed: [case, case, other][i])
    v = _forged_verdict()
    ones = fingerprint(good[0])["sums"]
    res = SimpleNamespace(log="", messages=[{"event": "timed_inputs", "config": None,
                                             "cases": {"0": {"seed": 1, "inputs": []}, "1": {"seed": 2, "inputs": []}},
                                             "written": {"samples": {"0": [ones], "1": [ones]}, "inputs_after": {"0": [], "1": []}}}])
    try:
        r = timed._recheck_samples(v, res, prep, out, "timing.kbt", [0, 1], judge_mod.JudgeOptions(), "", "d")
        assert r.hard == "crash" and "timed sets" in r.message and r.message.startswith("[d]"), r.message
        # the same record with exactly the group's sets passes
        tensorfile.write(str(tmp_path / "out" / "timing.kbt"), {"samples": {"0": good, "1": good}, "inputs_after": {"0": [], "1": []}})
        v = _forged_verdict()
        r = timed._recheck_samples(v, res, prep, out, "timing.kbt", [0, 1], judge_mod.JudgeOptions(), "", "d")
        assert r.hard is None and r.tol_needed == 0.0, r.message
        tensorfile.write(str(tmp_path / "out" / "timing.kbt"), {"samples": {"0": good, "1": good}, "inputs_after": {"0": []}})
        assert timed._recheck_samples(v, res, prep, out, "timing.kbt", [0, 1], judge_mod.JudgeOptions(), "", "d").hard == "crash"
    finally:
        out.close()


@pytest.mark.parametrize("reported, why", [
    (None, "no seeds"),                                                       # never reported
    ({"0": {"seed": 5, "inputs": [[1.0, 2.0]]}}, "no seeds"),                 # a report naming other sets than the group's
    ({"0": {"seed": 5, "inputs": [[1.0, 2.0]]}, "1": {"inputs": [[1.0, 2.0]]}}, "holds no seed"),
    ({"0": {"seed": 5, "inputs": [[1.0, 2.0]]}, "1": {"seed": -3, "inputs": [[1.0, 2.0]]}}, "holds no seed"),
    ({"0": {"seed": 5, "inputs": [[1.0, 2.0]]}, "1": {"seed": 6, "inputs": [[9.0, 2.0]]}}, "steered"),  # set 1 drawn as other data
])
def test_timed_inputs_must_be_the_judges(tmp_path, reported, why):
    """The timed sets are drawn in the candidate's process after its import, each just before its
    first timed call, with a seed from the OS; the worker reports each set's seed and fingerprints,
    the judge draws the same set itself (PreparedProblem.timed_case) and re-checks the samples against
    its own reference on it. A missing or seedless report, or fingerprints other than the judge's
    draw of that seed (a steered draw), fail the candidate (input_mutated), whatever its outputs."""
    from types import SimpleNamespace

    import torch

    from kbench_lib.judging import pipeline as judge_mod
    from kbench_lib.measure import tensorfile
    from kbench_lib.measure.compare import fingerprint

    fp = {"shape": [2], "dtype": "torch.float32", "sums": [1.0, 2.0]}
    out = judge_mod._OutDir(tmp_path)
    good = [torch.ones(3)]
    tensorfile.write(str(tmp_path / "out" / "timing.kbt"), {"samples": {"0": good, "1": good}, "inputs_after": {"0": [fp], "1": [fp]}})
    case = SimpleNamespace(expected=good, inputs=[fp], config="default")
    asked = []
    prep = SimpleNamespace(device="cpu", precision="fp32", cases=[case, case], timed_case=lambda i, seed: asked.append((i, seed)) or case)
    msgs = [] if reported is None else [{"event": "timed_inputs", "config": None, "cases": reported}]
    v = _forged_verdict()
    try:
        r = timed._recheck_samples(v, SimpleNamespace(log="", messages=msgs), prep, out, "timing.kbt", [0, 1],
                                       judge_mod.JudgeOptions(), "", "default")
        assert r.hard == "input_mutated" and why in r.message, r.message
        ones = fingerprint(good[0])["sums"]
        written = {"samples": {"0": [ones], "1": [ones]}, "inputs_after": {"0": [fp], "1": [fp]}}
        honest = [{"event": "timed_inputs", "config": None, "written": written,
                   "cases": {"0": {"seed": 11, "inputs": [[1.0, 2.0]]}, "1": {"seed": 12, "inputs": [[1.0, 2.0]]}}}]
        v, asked[:] = _forged_verdict(), []
        r = timed._recheck_samples(v, SimpleNamespace(log="", messages=honest), prep, out, "timing.kbt", [0, 1],
                                       judge_mod.JudgeOptions(), "", "default")
        assert r.hard is None, r.message
        assert asked == [(0, 11), (1, 12)]  # the judge drew the sets with the worker's seeds
        # the same report labelled as another configuration's is not this run's
        other = [{**honest[0], "config": "small_variant0"}]
        v = _forged_verdict()
        assert timed._recheck_samples(v, SimpleNamespace(log="", messages=other), prep, out, "timing.kbt", [0, 1],
                                          judge_mod.JudgeOptions(), "", "default").hard
        # a record rewritten after the worker reported it (a finalizer that ran after the write)
        tensorfile.write(str(tmp_path / "out" / "timing.kbt"),
                         {"samples": {"0": [torch.full((3,), 2.0)], "1": good}, "inputs_after": {"0": [fp], "1": [fp]}})
        v = _forged_verdict()
        r = timed._recheck_samples(v, SimpleNamespace(log="", messages=honest), prep, out, "timing.kbt", [0, 1],
                                       judge_mod.JudgeOptions(), "", "default")
        assert r.hard == "crash" and "rewritten" in r.message, r.message
    finally:
        out.close()


def test_a_file_planted_at_out_during_the_build_is_the_candidates_crash(scale_add_relu, fast_cpu_opts, fixtures):
    """A compiled candidate's import runs at build time too: one that puts a plain file where the
    job's ``out`` folder was fails with its own verdict, never as an error of the judge."""
    from kbench_lib.core.candidates import Candidate

    swap = ("import os, shutil\n"
            "_out = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'out')\n"
            "if os.path.isdir(_out) and not os.path.islink(_out):\n"
            "    shutil.rmtree(_out)\n"
            "    open(_out, 'w').write('not a folder')\n")
    source = (fixtures / "candidates" / "scale_add_relu_cpp.py").read_text() + "\n" + swap
    v = judge(scale_add_relu, Candidate(source, "cpp"), fast_cpu_opts)
    assert not v.correct and v.failure == "crash", (v.failure, v.message)


def test_reference_state_is_fingerprinted_before_the_reference_runs():
    """A module in training mode updates buffers as it runs (BatchNorm's running statistics): the
    judge's fingerprint of the reference state must be that of the model the worker loads, which
    has not run (H100, 2026-11-25: every judgement of level3/6_ResNet_BasicBlock ended as a
    judge_error, 'the worker drew other inputs or reference state than the judge')."""
    from pathlib import Path

    from kbench_lib.suite.problems import load_problem
    from kbench_lib.suite.reference import make_case, reference_state, state_fingerprint

    problem = load_problem(Path(__file__).resolve().parent.parent / "problems" / "level3" / "6_ResNet_BasicBlock.py")
    cfg = problem.configs(small=True, device="cpu")[0]
    _, state = reference_state(problem, cfg, 11)
    case = make_case(problem, cfg, 11, 12, "cpu")
    assert any("running_mean" in k for k in state)
    assert case.state_sums == state_fingerprint(state)


def test_a_second_report_on_the_channel_is_forged():
    """The candidate shares the worker's process and can write on its message pipe; the reports the
    worker sends once (per configuration, per case) must come once, or none of them can be trusted."""
    from kbench_lib.judging.worker_reports import _forged_reports

    honest = [{"event": "inputs", "cases": []}, {"event": "case_done", "case": 0}, {"event": "case_done", "case": 1},
              {"event": "timed_inputs", "config": "v1", "cases": {}}, {"event": "timed_inputs", "config": None, "cases": {}},
              {"event": "variant_timing", "config": "v1"}, {"event": "timing"}, {"event": "done"}, {"event": "stage"}, {"event": "stage"}]
    assert _forged_reports(honest) is None
    for extra in ({"event": "timing", "timing": {"median_ms": 1e-6}}, {"event": "case_done", "case": 1},
                  {"event": "timed_inputs", "config": None, "cases": {}}, {"event": "inputs", "cases": []}):
        why = _forged_reports(honest[:-1] + [extra] + honest[-1:])
        assert why and extra["event"] in why, (extra, why)


def test_a_harness_failure_after_the_import_is_the_candidates():
    """A harness_error before the candidate was imported is the judge's fault (JudgeError); after it,
    the candidate's doing or a report it forged to pass its own failure off as the judge's: a crash."""
    from types import SimpleNamespace

    from kbench_lib.judging import pipeline as judge_mod

    prep = SimpleNamespace(cases=[], timed=[])
    before = SimpleNamespace(messages=[{"event": "stage", "stage": "build"}, {"event": "harness_error", "message": "boom"}], log="")
    with pytest.raises(judge_mod.JudgeError):
        judge_mod._run_failed(_forged_verdict(), before, prep, judge_mod.JudgeOptions())
    after = SimpleNamespace(messages=[{"event": "inputs", "cases": []}, {"event": "stage", "stage": "load"},
                                      {"event": "harness_error", "message": "boom"}], log="")
    v = _forged_verdict()
    assert judge_mod._run_failed(v, after, prep, judge_mod.JudgeOptions())
    assert v.failure == "crash" and "after the candidate was imported" in v.message


def test_a_kernel_registered_over_a_drawing_operator_is_seen(tmp_path):
    """torch.library can register a kernel over an aten operator ("aten" IMPL); one over an operator
    the timed draw dispatches to would see every timed set as it is made. The worker records the
    operators a checked draw uses (before the candidate exists) and compares their dispatch tables
    around each timed draw. Run in a child process: the registration is global to the process."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    code = r'''
import json, sys, warnings
import torch
from kbench_lib.isolation.worker import drawing
from kbench_lib.isolation.worker.start import _warm_imports
warnings.simplefilter("ignore")
job = {"problem_path": sys.argv[1], "precision": "fp32", "cases": [
    {"config": "default", "overrides": {}, "init_seed": 3, "input_seed": 4, "timed": False, "grad_output": None},
    {"config": "default", "overrides": {}, "init_seed": 3, "input_seed": None, "timed": True, "grad_output": None}]}
_warm_imports()
cases = drawing._draw_cases(job, torch.device("cpu"))
before = drawing._drawing_state(cases)
clean = drawing._drawing_tampered(before, cases)
lib = torch.library.Library("aten", "IMPL")
lib.impl("normal_", lambda self, mean=0.0, std=1.0, generator=None: self, "CPU")
after = drawing._drawing_tampered(before, cases)
lib.impl("mul.Tensor", lambda a, b: a, "CPU")  # an overload, not the default (its table has the overload's name)
print(json.dumps({"clean": clean, "after": after, "overload": drawing._drawing_tampered(before, cases), "ops": sorted(drawing._DRAW_OPS)}))
'''
    r = subprocess.run([sys.executable, "-c", code, str(repo / "tests" / "adversarial" / "problems" / "2_Linear_GELU.py")],
                       capture_output=True, text=True, timeout=300, cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)})
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["clean"] == [], got
    assert "dispatch:aten::normal_" in got["after"], got
    assert "dispatch:aten::mul.Tensor" in got["overload"], got
    assert "aten::mul.Tensor" in got["ops"]  # recorded, with its overload, from the checked draw (its fingerprints)
    assert "aten::randn" in got["ops"] and "aten::randn.generator" in got["ops"]  # every overload of the fixed list


def test_a_candidate_that_does_not_parse_is_judged_without_a_build_or_a_process(scale_add_relu, fixtures, fast_cpu_opts):
    from kbench_lib.core.candidates import Candidate

    v = _judge(scale_add_relu, fixtures, "syntax_error.py", fast_cpu_opts)
    assert v.failure == "load_error" and "syntax error in candidate" in v.message and not v.compiled
    assert "run_start" not in v.stage_s and "write_job" not in v.stage_s
    cpp = (fixtures / "candidates" / "scale_add_relu_cpp.py").read_text().replace("class ModelNew(", "class ModelNew((", 1)
    v = judge(scale_add_relu, Candidate(source=cpp, backend="cpp"), fast_cpu_opts)
    assert v.failure == "load_error" and "syntax error" in v.message and v.build_s is None and not v.compiled


def test_a_candidates_torch_compile_precompiles_on_threads_and_compiles_in_its_process(scale_add_relu, fast_cpu_opts):
    """Inductor in the candidate's process starts no pool of compile processes (its
    ``compile_threads`` 1, which the processes_started check would see outlive the calls), while
    max-autotune's precompile threads, which end with the compile, are the build's count."""
    import os

    from kbench_lib.core.candidates import Candidate

    expected = max(1, min(8, os.cpu_count() or 1))
    source = (
        "import os\nimport torch\nimport torch._inductor.config as inductor\n"
        "class ModelNew(torch.nn.Module):\n"
        "    def __init__(self, scale):\n        super().__init__()\n        self.scale = scale\n"
        "    def forward(self, a, b):\n"
        f"        seen = (inductor.compile_threads, os.environ.get('TORCHINDUCTOR_COMPILE_THREADS'))\n"
        f"        if seen != (1, {str(expected)!r}):\n            raise RuntimeError(f'inductor sees {{seen}}')\n"
        "        return torch.relu(a * self.scale + b)\n"
    )
    v = judge(scale_add_relu, Candidate(source, "torch"), fast_cpu_opts)
    assert v.correct and v.failure is None, (v.failure, v.message)


def test_inductors_compiles_stay_in_the_workers_process_where_its_config_is_imported():
    import torch._inductor.config as inductor

    from kbench_lib.isolation.worker.start import compile_in_process

    before = inductor.compile_threads
    try:
        inductor.compile_threads = 4
        compile_in_process()
        assert inductor.compile_threads == 1
    finally:
        inductor.compile_threads = before


def test_a_batch_judges_a_candidate_with_no_build_while_the_one_before_it_builds(scale_add_relu, fixtures, fast_cpu_opts, tmp_path):
    """The first sample's build is still running (it hangs to its limit): the second, which needs
    no build, is judged and recorded first; both are recorded."""
    from kbench_lib.batch import runner

    folder = tmp_path / "cands"
    folder.mkdir()
    stem = scale_add_relu.path.stem
    (folder / f"{stem}__a_hang.py").write_text((fixtures / "bad_candidates" / "build_hang.py").read_text())
    (folder / f"{stem}__b_torch.py").write_text((fixtures / "candidates" / "scale_add_relu_torch.py").read_text())
    fast_cpu_opts.build_timeout_s, fast_cpu_opts.idle_timeout_s = 8, 0
    _, rows = runner.run_batch([scale_add_relu], f"folder:{folder}", run_id="ahead", runs_root=tmp_path / "runs", opts=fast_cpu_opts,
                               progress=False, prebuild_jobs=2)
    assert [r["failure"] for r in rows] == [None, "compile_error"], [(r["sample"], r["failure"], r["message"]) for r in rows]
