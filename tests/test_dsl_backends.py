"""The kernel-DSL backends: ``cute`` (NVIDIA's CuTe DSL) and ``tilelang`` (TileLang).

Without a GPU: detection (the header and the source's own machinery), the one-line failure where
the ``dsl`` extra is missing (through ``kbench eval`` and a batch that goes on), the static guards,
the prompts' worked examples and the lab's starters, the build's cache entry, and how the worker
reads a DSL's failures (a compile error from a runtime one, the DSL's version named). On a GPU
(``gpu``, with the extra installed): the reference solutions judged correct and trusted, a kernel
that does not compile a ``compile_error``, one that faults a runtime failure with the next judged.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from kbench_lib.core import dsl_packages
from kbench_lib.core.candidates import BACKENDS, detect_backend, load_candidate
from kbench_lib.judging.guards import static_flags

from conftest import FIXTURES, REPO

DSLS = ("cute", "tilelang")
SOLUTIONS = REPO / "problems" / "solutions" / "level1"
SOLVED = {  # problem -> its reference solutions in each DSL
    "51_ReLU": ("cute", "tilelang"),
    "87_Softmax_LastDim": ("cute", "tilelang"),
    "1_Square_Matmul": ("cute", "tilelang"),
}


@pytest.mark.parametrize("src, backend", [
    ("import cutlass\nimport cutlass.cute as cute\n@cute.kernel\ndef k(x):\n    pass\n", "cute"),
    ("from cutlass import cute\n@cute.jit\ndef host(x):\n    pass\n", "cute"),
    ("from cutlass.cute import kernel\n@kernel\ndef k(x):\n    pass\n", "cute"),
    ("import cutlass.cute\n@cutlass.cute.kernel\ndef k(x):\n    pass\n", "cute"),
    ("import tilelang.language as T\n@T.prim_func\ndef f(A: T.Tensor((4,), 'float32')):\n    pass\n", "tilelang"),
    ("import tilelang as tl\n@tl.jit(out_idx=[-1])\ndef program(n):\n    pass\n", "tilelang"),
    ("from tilelang import language as L\n@L.prim_func\ndef f():\n    pass\n", "tilelang"),
    ("import tilelang\nkernel = tilelang.compile(program())\n", "tilelang"),
    # importing a DSL makes a DSL candidate (one that then writes no kernel is flagged no_custom_kernel)
    ("import torch\nimport tilelang\n", "tilelang"),
    ("import torch\nimport cutlass.cute as cute\n", "cute"),
    ("# kbench: backend=cute\nimport torch\n", "cute"),
    ("# kbench: backend=tilelang\nimport torch\n", "tilelang"),
    # the words alone, or a DSL imported beside a CUDA extension, are not a DSL's machinery
    ("s = 'import tilelang; @cute.kernel'\n", "torch"),
    ("import tilelang\nfrom torch.utils.cpp_extension import load_inline\nm = load_inline(name='a', cpp_sources='', cuda_sources='', functions=[])\n",
     "cuda"),
    ("import cute\n@cute.kernel\ndef k():\n    pass\n", "torch"),  # a module named cute that is not CuTe DSL
])
def test_detection(src, backend):
    assert detect_backend(src) == backend


def test_dsl_backends_are_backends(tmp_path):
    assert set(DSLS) <= set(BACKENDS) and set(DSLS) == set(dsl_packages.DSL_BACKENDS)
    f = tmp_path / "c.py"
    f.write_text("import torch\n")
    assert load_candidate(f, "tilelang").backend == "tilelang" and load_candidate(f, "cute").backend == "cute"


@pytest.mark.parametrize("backend", DSLS)
@pytest.mark.skipif(any(dsl_packages.installed(b) for b in DSLS), reason="a DSL is installed here: its absence cannot be seen")
def test_a_missing_dsl_is_a_one_line_compile_error_from_kbench_eval(backend):
    solution = SOLUTIONS / f"51_ReLU__{backend}.py"
    r = subprocess.run([sys.executable, "-m", "kbench_lib.cli", "eval", "level1/51_ReLU", str(solution), "--device", "cpu", "--json"],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout.strip().splitlines()[-1])
    assert v["failure"] == "compile_error" and v["correct"] is False and v["backend"] == backend
    assert v["message"] == dsl_packages.missing_message(backend) and "\n" not in v["message"]
    assert dsl_packages.INSTALL in v["message"] and "Traceback" not in r.stdout + r.stderr


def test_a_missing_dsl_fails_in_the_judge_without_a_worker(monkeypatch, scale_add_relu, fast_cpu_opts):
    from kbench_lib.core.candidates import Candidate
    from kbench_lib.judging import pipeline

    monkeypatch.setattr(dsl_packages, "version", lambda backend: None)  # no metadata: not installed
    monkeypatch.setattr(pipeline.sandbox, "start_isolated", lambda *a, **k: pytest.fail("no worker for a missing DSL"))
    for backend in DSLS:
        v = pipeline.judge(scale_add_relu, Candidate("import torch\n", backend), fast_cpu_opts)
        assert (v.failure, v.message, v.compiled) == ("compile_error", dsl_packages.missing_message(backend), False)
    # metadata without a findable module (a --target install whose .pth file is never read): said so
    monkeypatch.setattr(dsl_packages, "version", lambda backend: "1.0")
    monkeypatch.setattr(dsl_packages, "_findable", lambda backend: False)
    why = dsl_packages.unavailable("cute", "cuda")
    assert why.startswith("the cute backend's package (nvidia-cutlass-dsl 1.0) is installed, but its module cutlass") and "\n" not in why


def test_a_batch_goes_on_past_a_dsl_candidate_it_cannot_build(tmp_path, capsys):
    """On the CPU a DSL candidate cannot be built (its package missing, or no GPU to compile for):
    its record says so in one line, and the batch judges the next candidate."""
    from kbench_lib.cli import main
    from kbench_lib.scoring.records import read_records

    problem = FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py"
    folder = tmp_path / "cands"
    folder.mkdir()
    (folder / "1_Scale_Add_ReLU__a_tilelang.py").write_text((SOLUTIONS / "51_ReLU__tilelang.py").read_text())
    (folder / "1_Scale_Add_ReLU__b_torch.py").write_text(problem.read_text().replace("class Model(", "class ModelNew("))
    code = main(["run", str(FIXTURES / "problems"), "--model", f"folder:{folder}", "--filter", "1_Scale_Add_ReLU", "--device", "cpu",
                 "--no-timing", "--runs-root", str(tmp_path / "runs"), "--run-id", "dsl", "--quiet"])
    assert code == 0, capsys.readouterr().err
    rows = read_records(tmp_path / "runs", "dsl").sort_values("backend").reset_index(drop=True)
    assert list(rows["backend"]) == ["tilelang", "torch"]
    dsl, torch_row = rows.iloc[0], rows.iloc[1]
    assert dsl["failure"] == "compile_error" and "\n" not in dsl["message"]
    assert dsl["message"] in (dsl_packages.missing_message("tilelang"), dsl_packages.unavailable("tilelang", "cpu"))
    assert bool(torch_row["correct"])


def test_static_guards_on_dsl_sources():
    for path in sorted(SOLUTIONS.glob("*__cute.py")) + sorted(SOLUTIONS.glob("*__tilelang.py")):
        src = path.read_text()
        assert static_flags(src, detect_backend(src)) == [], path.name  # real kernels: no flag
    torch_only = "import torch\n{imports}\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
    for backend, imports in (("cute", "import cutlass\nimport cutlass.cute as cute"), ("tilelang", "import tilelang\nimport tilelang.language as T")):
        flags = static_flags(torch_only.format(imports=imports), backend)
        assert [f.split(":")[0] for f in flags] == ["no_custom_kernel"], flags
    # a host function alone, or a prim_func that opens no kernel, is not a kernel
    jit_only = "import cutlass.cute as cute\n@cute.jit\ndef host(x: cute.Tensor):\n    pass\n"
    no_launch = "import tilelang.language as T\n@T.prim_func\ndef f(A: T.Tensor((4,), 'float32')):\n    T.evaluate(0)\n"
    assert any(f.startswith("no_custom_kernel") for f in static_flags(jit_only, "cute"))
    assert any(f.startswith("no_custom_kernel") for f in static_flags(no_launch, "tilelang"))
    # a tilelang.jit function in the eager style (tensor annotations, a T.Kernel in its body) is one
    eager = ("import tilelang\nimport tilelang.language as T\n@tilelang.jit\ndef add(A, B):\n    n = T.const('n')\n"
             "    A: T.Tensor[[n], 'float32']\n    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:\n        pass\n")
    assert static_flags(eager, detect_backend(eager)) == []
    # patching a DSL through its alias is patching; the DSL's own compile is not the builtin
    assert any(f.startswith("patches_library") for f in static_flags("import tilelang.language as T\nT.exp = abs\n", "tilelang"))
    assert any(f.startswith("patches_library") for f in static_flags("import cutlass.cute as cute\ncute.compile = None\n", "cute"))
    named = "from cutlass.cute import compile, kernel\n@kernel\ndef k(x):\n    pass\nf = compile(k)\n"
    assert static_flags(named, "cute") == []
    assert any(f.startswith("dynamic_code") for f in static_flags("import torch\nc = compile('1', 'x', 'eval')\n", "torch"))


@pytest.mark.parametrize("backend", DSLS)
def test_prompt_examples_and_lab_starters(backend):
    from kbench_lib.generation.prompts import PromptOptions, build_messages, example_source
    from kbench_lib.lab import starter
    from kbench_lib.suite.problems import load_problem

    example = example_source(backend)
    compile(example, f"example_{backend}.py", "exec")
    assert detect_backend(example) == backend and static_flags(example, backend) == []
    problem = load_problem(REPO / "problems" / "level1" / "51_ReLU.py", level="level1")
    text = build_messages(problem, PromptOptions(backend=backend))[1]["content"]
    assert example.strip() in text and {"cute": "CuTe DSL kernels", "tilelang": "TileLang kernels"}[backend] in text
    first = starter(problem, backend)
    compile(first, "starter.py", "exec")
    assert first.startswith(f"# kbench: backend={backend}") and detect_backend(first) == backend
    assert static_flags(first, backend) == [] and "class ModelNew(nn.Module)" in first
    assert starter(problem) == starter(problem, "torch") and detect_backend(starter(problem)) == "torch"


def test_the_reference_model_has_the_dsl_solutions():
    from kbench_lib.generation.models import folder_model, get_model
    from kbench_lib.suite.problems import load_problem

    for stem, backends in SOLVED.items():
        problem = load_problem(REPO / "problems" / "level1" / f"{stem}.py", level="level1")
        found = {s.candidate.backend for s in get_model("reference")(problem)}
        assert set(backends) <= found, (stem, found)
        on_cpu = folder_model(SOLUTIONS.parent, ("cpp", "triton", "torch"))(problem)
        assert not {s.candidate.backend for s in on_cpu} & set(DSLS)


def test_a_dsl_build_keeps_the_dsls_cache_in_the_candidates_entry(monkeypatch):
    from kbench_lib.core.candidates import Candidate
    from kbench_lib.judging import build

    for backend in DSLS:
        c = Candidate(f"# {backend}\n", backend)
        assert build.needs_build(c)
        pkg = dsl_packages.PACKAGES[backend]
        env = build.build_env(c, "cpu")
        assert env[pkg.cache_env] == str(build.build_dir(c, "cpu") / pkg.cache_folder)
        assert str(build.build_dir(c, "cpu")) in build.writable_dirs(c, "cpu")
        before = build.build_key(c, "cpu")
        monkeypatch.setattr(dsl_packages, "version", lambda b: "999.0")
        assert build.build_key(c, "cpu") != before  # another version of the DSL compiles again
        monkeypatch.undo()
    assert "CUTE_DSL_CACHE_DIR" not in build.build_env(Candidate("x", "cuda"), "cpu")


def _fake_frames(tmp_path, relative: str, name: str):
    """A function defined in a file at ``tmp_path/relative`` (a path like a DSL's own) that raises."""
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("def fail(inner=None):\n    if inner is not None:\n        inner()\n    raise RuntimeError('failed here')\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fail


def _raised(fn, *args):
    try:
        fn(*args)
    except RuntimeError as e:
        return e
    raise AssertionError("did not raise")


def test_a_dsl_compile_error_is_told_from_a_runtime_error(tmp_path, monkeypatch):
    from kbench_lib.isolation.worker import report

    nvcc = _fake_frames(tmp_path, "site/tilelang/contrib/nvcc.py", "fake_tl_nvcc")
    launch = _fake_frames(tmp_path, "site/tilelang/jit/adapter/tvm_ffi.py", "fake_tl_launch")
    tracer = _fake_frames(tmp_path, "site/cutlass/base_dsl/dsl.py", "fake_cute_tracer")
    executor = _fake_frames(tmp_path, "site/cutlass/base_dsl/jit_executor.py", "fake_cute_executor")
    user = _fake_frames(tmp_path, "job/candidate.py", "fake_candidate")
    assert dsl_packages.raised_compiling(_raised(nvcc), "tilelang")
    assert not dsl_packages.raised_compiling(_raised(launch), "tilelang")
    assert dsl_packages.raised_compiling(_raised(tracer, user), "cute")  # the kernel's own code, raising while traced
    assert not dsl_packages.raised_compiling(_raised(executor), "cute")
    assert not dsl_packages.raised_compiling(_raised(nvcc), "cute") and not dsl_packages.raised_compiling(_raised(user), "tilelang")

    monkeypatch.setattr(report, "_BACKEND", ["tilelang"])
    assert report._failure_of(_raised(nvcc)) == "compile_error" and report._is_build_error(_raised(nvcc))
    assert report._failure_of(_raised(launch)) == "runtime_error" and not report._is_build_error(_raised(launch))
    monkeypatch.setattr(report, "_BACKEND", ["cuda"])  # another backend's frames of the same names are not read so
    assert report._failure_of(_raised(nvcc)) == "runtime_error"


def test_a_dsl_failure_names_the_dsls_version_without_terminal_colours(monkeypatch):
    from kbench_lib.isolation.worker import report

    monkeypatch.setattr(dsl_packages, "version", lambda b: "9.9" if b == "cute" else None)
    monkeypatch.setattr(report, "_BACKEND", ["cute"])
    text = report._trace(RuntimeError("\x1b[91merror:\x1b[0m no such atom"))
    assert "\x1b" not in text and "error: no such atom" in text
    assert text.endswith("(the cute backend's package here: nvidia-cutlass-dsl 9.9)")
    monkeypatch.setattr(report, "_BACKEND", ["cuda"])
    assert "backend's package" not in report._trace(RuntimeError("x"))


def test_the_worker_imports_a_dsl_before_the_candidate(tmp_path, monkeypatch):
    from kbench_lib.isolation.worker.start import _import_backend

    assert _import_backend(None) is None and _import_backend("torch") is None and _import_backend("cuda") is None
    (tmp_path / "kbench_fake_dsl_ok.py").write_text("VALUE = 1\n")
    (tmp_path / "kbench_fake_dsl_broken.py").write_text("raise OSError('libcuda_dialect.so: cannot open shared object file')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    pkg = dsl_packages.PACKAGES["tilelang"]
    for modules, expected in ((("kbench_fake_dsl_ok",), None),
                              (("kbench_fake_dsl_absent",), dsl_packages.missing_message("tilelang")),
                              (("kbench_fake_dsl_broken",), "failed to import: OSError: libcuda_dialect.so: cannot open shared object file")):
        monkeypatch.setitem(dsl_packages.PACKAGES, "tilelang", pkg.__class__(**{**pkg.__dict__, "modules": modules}))
        got = _import_backend("tilelang")
        if expected is None or expected == dsl_packages.missing_message("tilelang"):
            assert got == expected
        else:
            assert expected in got and "\n" not in got, got


# ---------------------------------------------------------------------------- on a GPU, with the extra

def _needs(backend: str):
    return pytest.mark.skipif(not dsl_packages.installed(backend), reason=f"{dsl_packages.PACKAGES[backend].distribution} is not installed")


@pytest.fixture
def gpu_opts():
    from kbench_lib.judging.pipeline import JudgeOptions

    return JudgeOptions(device="cuda", timing_budget_s=0.5)


def _problem(stem: str):
    from kbench_lib.suite.problems import load_problem

    return load_problem(REPO / "problems" / "level1" / f"{stem}.py", level="level1")


@pytest.mark.gpu
@pytest.mark.parametrize("stem, backend", [(s, b) for s, bs in SOLVED.items() for b in bs])
def test_reference_solutions_are_correct_and_trusted(stem, backend, gpu_opts):
    if not dsl_packages.installed(backend):
        pytest.skip(f"{dsl_packages.PACKAGES[backend].distribution} is not installed")
    from kbench_lib.judging.pipeline import judge

    v = judge(_problem(stem), load_candidate(SOLUTIONS / f"{stem}__{backend}.py"), gpu_opts)
    assert v.backend == backend and v.compiled
    assert v.correct and v.flags == [], (v.failure, v.message, v.flags)
    assert v.runtime_ms and v.runtime_ms > 0


@pytest.mark.gpu
@pytest.mark.parametrize("backend", [pytest.param(b, marks=_needs(b)) for b in DSLS])
def test_a_kernel_that_does_not_compile_is_a_compile_error(backend, gpu_opts):
    from kbench_lib.judging.pipeline import judge

    v = judge(_problem("51_ReLU"), load_candidate(FIXTURES / "dsl" / f"{backend}_compile_error.py"), gpu_opts)
    assert v.failure == "compile_error" and not v.compiled, (v.failure, v.message)
    assert "no_such" in v.message and dsl_packages.described(backend) in v.message


@pytest.mark.gpu
@pytest.mark.parametrize("backend", [pytest.param(b, marks=_needs(b)) for b in DSLS])
def test_a_kernel_that_faults_is_contained_and_the_next_runs(backend, gpu_opts):
    from kbench_lib.judging.pipeline import judge

    v = judge(_problem("51_ReLU"), load_candidate(FIXTURES / "dsl" / f"{backend}_launch_fault.py"), gpu_opts)
    assert not v.correct and v.failure in ("runtime_error", "crash"), (v.failure, v.message)
    ok = judge(_problem("51_ReLU"), load_candidate(SOLUTIONS / f"51_ReLU__{backend}.py"), gpu_opts)
    assert ok.correct and ok.flags == [], (ok.failure, ok.message, ok.flags)


def test_a_notebook_batch_skips_dsl_solutions_without_the_extra_and_says_why(monkeypatch):
    from kbench_lib import workflows
    from kbench_lib.core import dsl_packages

    monkeypatch.setattr(dsl_packages, "installed", lambda backend: False)
    assert "cute" not in workflows.runnable_backends("cuda") and "tilelang" not in workflows.runnable_backends("cuda")
    chosen, skipped = workflows.plan(None, "reference", "cuda", levels=["level1"])
    assert ("level1/51_ReLU", "cute") in skipped and ("level1/51_ReLU", "tilelang") in skipped
    assert "kbench[dsl]" in workflows._why_skipped("cute", "cuda")
    assert workflows._why_skipped("cuda", "cpu") == "cannot run on cpu"
    monkeypatch.setattr(dsl_packages, "installed", lambda backend: True)
    assert {"cute", "tilelang"} <= set(workflows.runnable_backends("cuda"))
