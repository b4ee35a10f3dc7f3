"""The build's warm-up of an extension compiled at the first call
(kbench_lib.isolation.worker.lazy_compile): which sources get the call under fake tensors
(:func:`compiles_lazily`, read with ``ast``), that the call ends once the extension is built (a
raw-pointer kernel never runs on the fake tensors' null pointers), and that the call, made after the
build reported ``built``, can never fail the build (a hang) nor leave a process behind."""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from kbench_lib.isolation.worker.lazy_compile import compiles_lazily

KERNEL = 'load_inline(name="k", cpp_sources="", functions=["f"])'


def _lazy(source: str) -> bool:
    return compiles_lazily(textwrap.dedent(source))


def test_a_compile_in_forward_is_lazy():
    assert _lazy(f"""
        from torch.utils.cpp_extension import load_inline
        class ModelNew:
            def forward(self, x):
                if self.ext is None:
                    self.ext = {KERNEL}
                return self.ext.f(x)
    """)


def test_a_compile_in_a_helper_that_forward_calls_is_lazy():
    assert _lazy(f"""
        from torch.utils.cpp_extension import load_inline
        _ext = None
        def _kernel():
            global _ext
            if _ext is None:
                _ext = {KERNEL}
            return _ext
        class ModelNew:
            def forward(self, x):
                return _kernel().f(x)
    """)


def test_a_compile_at_module_level_is_not_lazy():
    assert not _lazy(f"""
        from torch.utils.cpp_extension import load_inline
        _ext = {KERNEL}
        class ModelNew:
            ext = {KERNEL}  # a class body runs at import too
            def forward(self, x):
                return _ext.f(x)
    """)


def test_a_compile_in_init_is_not_lazy():
    assert not _lazy(f"""
        from torch.utils.cpp_extension import load_inline
        class ModelNew:
            def __init__(self):
                self.ext = {KERNEL}
            def forward(self, x):
                return self.ext.f(x)
    """)


def test_a_helper_called_only_at_import_or_from_init_is_not_lazy():
    assert not _lazy(f"""
        import torch.utils.cpp_extension
        def _build():
            return torch.utils.cpp_extension.{KERNEL}
        def _build_again():
            return _build()
        _ext = _build()
        class ModelNew:
            def __init__(self):
                self.ext = _build_again()
    """)


def test_an_aliased_import_is_seen():
    assert _lazy("""
        from torch.utils.cpp_extension import load_inline as li
        class ModelNew:
            def forward(self, x):
                return li(name="k", cpp_sources="", functions=["f"]).f(x)
    """)
    assert not _lazy("""
        from torch.utils.cpp_extension import load_inline as li
        _ext = li(name="k", cpp_sources="", functions=["f"])
        class ModelNew:
            def forward(self, x):
                return _ext.f(x)
    """)


@pytest.mark.parametrize("imports, call", [
    ("import torch", "torch.utils.cpp_extension.load"),
    ("import torch as T", "T.utils.cpp_extension.load_inline"),
    ("import torch.utils.cpp_extension as ce", "ce.load"),
    ("from torch.utils import cpp_extension", "cpp_extension.load_inline"),
    ("from torch.utils.cpp_extension import *", "load_inline"),
])
def test_every_import_form_is_seen(imports, call):
    assert compiles_lazily(f"{imports}\nclass ModelNew:\n    def forward(self, x):\n        return {call}(name='k', sources=[]).f(x)\n")


@pytest.mark.parametrize("source", [
    "import json\nclass M:\n    def forward(self, f):\n        return json.load(f)\n",  # another module's load
    "import torch\nclass M:\n    def forward(self, f):\n        return torch.load(f)\n",
    "def load_inline(**kw): pass\nclass M:\n    def forward(self):\n        return load_inline()\n",  # not torch's
    "class M:\n    def forward(self, x):\n        return x +\n",  # does not parse: its import fails the build
])
def test_other_calls_are_not_lazy(source):
    assert not compiles_lazily(source)


def test_a_helper_referenced_other_than_by_a_call_from_import_or_init_is_lazy():
    assert compiles_lazily(f"""
from torch.utils.cpp_extension import load_inline
import functools
def _build():
    return {KERNEL}
_get = functools.lru_cache(None)(_build)  # passed, not called: called from who knows where
class ModelNew:
    def forward(self, x):
        return _get().f(x)
""")


def test_helpers_calling_helpers_are_answered_once_each():
    """60 helpers each calling the next twice: 2**60 paths from module level, each function asked once."""
    lines = ["from torch.utils.cpp_extension import load_inline", "def f0():", f"    return {KERNEL}"]
    for i in range(1, 60):
        lines += [f"def f{i}():", f"    f{i - 1}(); f{i - 1}()"]
    eager = "\n".join(lines + ["f59(); f59()", ""])
    assert not compiles_lazily(eager)
    assert compiles_lazily(eager + "class ModelNew:\n    def forward(self):\n        f30()\n")


# ---------------------------------------------------------------------------------------------------
# the build stage, for real (a Python start and a torch import per build)


def _build(source: Path, problem, opts, monkeypatch, tmp_path):
    """build_candidate on ``source``, and the isolated process's own result (its messages, its end)."""
    from kbench_lib.core.candidates import load_candidate
    from kbench_lib.isolation import sandbox
    from kbench_lib.judging import build_job

    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    seen = []
    real = sandbox.run_isolated

    def run_isolated(*args, **kw):
        seen.append(real(*args, **kw))
        return seen[-1]

    monkeypatch.setattr(build_job.sandbox, "run_isolated", run_isolated)
    c = load_candidate(source)
    return c, build_job.build_candidate(c, "cpu", opts, problem_path=problem.path), seen[0]


def test_the_warm_up_reaches_the_compile_of_a_model_with_parameters():
    """CUDA-L1's level2/57 on an H200: a ModelNew with parameters moved to the device under fake
    tensors raised ("Couldn't swap ModelNew.weight") before its forward reached load_inline, so the
    run compiled it. The warm-up makes the model on the device instead."""
    from types import SimpleNamespace

    import torch

    from kbench_lib.isolation.worker import lazy_compile

    reached = []

    class ModelNew(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.empty(n, n))
            torch.nn.init.kaiming_uniform_(self.weight)

        def forward(self, x):
            reached.append((x.shape, x.device.type))  # where its load_inline would be
            return x @ self.weight

    problem = SimpleNamespace(get_init_inputs=lambda: [4], get_inputs=lambda: [torch.randn(2, 4)])
    lazy_compile.call_on_fake(ModelNew, problem, "cpu")
    assert reached == [(torch.Size([2, 4]), "cpu")]


@pytest.mark.slow
def test_a_raw_pointer_kernel_compiled_at_the_first_call_is_compiled_by_the_build_and_never_run_there(
        scale_add_relu, fixtures, fast_cpu_opts, tmp_path, monkeypatch):
    """The CI failure of the first version of the warm-up, where the kernel compiles lazily: on the
    meta device its kernel read null pointers and killed the build's process. Under fake tensors the
    warm-up ends as soon as the extension is built: the process ends by itself, the kernel unrun."""
    from kbench_lib.judging import build
    from kbench_lib.judging.pipeline import judge

    c, b, res = _build(fixtures / "candidates" / "scale_add_relu_first_call_raw_pointers.py", scale_add_relu, fast_cpu_opts,
                       monkeypatch, tmp_path)
    assert [m["event"] for m in res.messages][-1] == "built" and res.returncode == 0, (res.returncode, res.signal_name, res.log)
    assert b.failure is None and not b.cached and build.is_built(c, "cpu"), b.message
    [so] = (build.build_dir(c, "cpu") / "kb_first_call_raw_pointers").glob("*.so")  # the warm-up compiled it
    seen = so.stat().st_mtime_ns
    v = judge(scale_add_relu, c, fast_cpu_opts)
    assert v.correct and v.failure is None and v.build_cached and v.max_abs_err == 0.0, v.message
    assert so.stat().st_mtime_ns == seen  # loaded by the run, not compiled again


@pytest.mark.slow
def test_a_raw_pointer_kernel_compiled_at_import_gets_no_warm_up(tmp_path, monkeypatch, fast_cpu_opts):
    """The CI failure itself: the adversarial suite's honest C++ candidate (raw pointers, compiled
    at import) is built by a process that ends by itself, and passes."""
    from kbench_lib.judging.pipeline import judge
    from kbench_lib.suite.problems import load_problem

    adversarial = Path(__file__).parent / "adversarial"
    problem = load_problem(adversarial / "problems" / "1_Scale_Add_ReLU.py")
    c, b, res = _build(adversarial / "legit" / "elementwise_cpp.py", problem, fast_cpu_opts, monkeypatch, tmp_path)
    assert res.returncode == 0 and [m["event"] for m in res.messages][-1] == "built", (res.returncode, res.log)
    assert b.failure is None, b.message
    v = judge(problem, c, fast_cpu_opts)
    assert v.correct and v.failure is None and v.build_cached, v.message


HANGS = '''# kbench: backend=cpp
import os, subprocess, time
import torch
import torch._subclasses.fake_tensor
import torch.nn as nn
from torch.utils.cpp_extension import load_inline


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        if torch._subclasses.fake_tensor.is_fake(a):  # the build's warm-up: a child left running, then a hang
            subprocess.Popen(["sleep", "{marker}"])
            time.sleep(1000)
        if a.numel() < 0:
            load_inline(name="never", cpp_sources="", functions=["f"])  # seen by compiles_lazily, never called
        return torch.relu(a * self.scale + b)
'''


def _running(marker: str) -> list[int]:
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read().split(b"\0"):
                    pids.append(int(pid))
        except OSError:
            continue
    return pids


@pytest.mark.slow
def test_a_warm_up_that_hangs_after_built_is_ended_with_its_children_and_the_build_stands(
        scale_add_relu, fast_cpu_opts, tmp_path, monkeypatch):
    from dataclasses import replace

    from kbench_lib.judging.pipeline import judge

    marker = f"{600 + os.getpid() % 1000}.{os.getpid()}"  # sleep's argument: this test's child, found in /proc
    source = tmp_path / "hangs_on_meta.py"
    source.write_text(HANGS.replace("{marker}", marker))
    opts = replace(fast_cpu_opts, idle_timeout_s=2.0, build_timeout_s=60.0)
    c, b, res = _build(source, scale_add_relu, opts, monkeypatch, tmp_path)
    assert res.timed_out and [m["event"] for m in res.messages][-1] == "built", (res.returncode, res.log)
    assert b.failure is None, b.message
    assert _running(marker) == []  # the whole session was killed: no stray process
    v = judge(scale_add_relu, c, fast_cpu_opts)
    assert v.correct and v.build_cached, v.message


@pytest.mark.parametrize("messages, timed_out, returncode, failure", [
    ([{"event": "built"}], False, -11, None),  # died after reporting: built
    ([{"event": "built"}], True, -9, None),  # ended at its limit after reporting: built
    ([], False, -11, "crash"),  # died before reporting
    ([{"event": "failure", "failure": "compile_error", "message": "x"}], False, 0, "compile_error"),
    ([], True, -9, "compile_error"),  # at its limit before reporting
])
def test_a_build_that_reported_built_is_built_whatever_its_process_did_after(messages, timed_out, returncode, failure,
                                                                             fast_cpu_opts, tmp_path, monkeypatch):
    from kbench_lib.core.candidates import Candidate
    from kbench_lib.isolation.sandbox import ProcessResult
    from kbench_lib.judging import build, build_job

    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    result = ProcessResult(returncode=returncode, timed_out=timed_out, wall_s=1.0, log="", messages=messages,
                           network_isolated=False)
    monkeypatch.setattr(build_job.sandbox, "run_isolated", lambda *a, **kw: result)
    c = Candidate(source=f"# kbench: backend=cpp\n# {messages} {timed_out} {returncode}\n", backend="cpp")
    b = build_job.build_candidate(c, "cpu", fast_cpu_opts)
    assert b.failure == failure
    assert build.is_built(c, "cpu") == (failure is None)
