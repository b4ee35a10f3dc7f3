from kbench_lib.judging.guards import Policy, static_flags

KERNEL = "from torch.utils.cpp_extension import load_inline\next = load_inline(name='k', cpp_sources='', functions=[])\n"


def test_clean_candidate_has_no_flags():
    assert static_flags(KERNEL + "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n", "cpp") == []


def test_monkey_patching_is_flagged():
    src = KERNEL + "import torch, time\ntorch.allclose = lambda *a, **k: True\ntime.perf_counter = lambda: 0.0\n"
    flags = static_flags(src, "cpp")
    assert any("torch.allclose" in f for f in flags) and any("time.perf_counter" in f for f in flags)
    assert any("setattr" in f for f in static_flags(KERNEL + "import torch\nsetattr(torch.cuda.Event, 'elapsed_time', None)\n", "cpp"))
    assert static_flags(KERNEL + "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n", "cpp")


def test_introspection_and_escape_are_flagged():
    src = KERNEL + "import gc, ctypes, os\nx = [o for o in gc.get_objects()]\nos._exit(0)\nimport socket\n"
    text = " ".join(static_flags(src, "cpp"))
    for word in ("gc", "ctypes", "get_objects", "_exit", "socket"):
        assert word in text


def test_kernel_required_for_custom_backends():
    assert any(f.startswith("no_custom_kernel") for f in static_flags("import torch\n", "cuda"))
    assert static_flags("import torch\n", "torch") == []
    assert static_flags("import torch\n", "cuda", Policy(custom_kernel_required=False)) == []


def test_policy_disables_a_check():
    src = KERNEL + "import threading\n"
    assert static_flags(src, "cpp")
    assert static_flags(src, "cpp", Policy(disabled={"suspect_import"})) == []
    assert static_flags(src, "cpp", Policy(static=False)) == []


def test_a_variant_timed_below_its_own_roofline_bound_is_flagged():
    """--time-variants: each variant's time is held against that variant's speed of light."""
    from types import SimpleNamespace

    from kbench_lib.judging.guards import runtime_flags

    timings = {"v0": {"runtime_ms": 0.5, "sol_ms": 0.4}, "v1": {"runtime_ms": 0.1, "sol_ms": 0.4}, "v2": {"runtime_ms": 0.1, "sol_ms": None}}
    v = SimpleNamespace(runtime_ms=2.0, sol_ms=1.0, variant_timings=timings)
    flags = runtime_flags(v, None)
    assert len(flags) == 1 and flags[0].startswith("faster_than_light") and "variant v1" in flags[0]
    assert runtime_flags(SimpleNamespace(runtime_ms=2.0, sol_ms=1.0, variant_timings={}), None) == []


def test_device_busy_far_beyond_the_timed_clock_is_unjoined_work():
    """threat #11's second check: the device-busy clock (every stream, overlaps once) against the
    timed median; an honest candidate stays near its time, an unjoined side stream is timed at launch."""
    from types import SimpleNamespace

    from kbench_lib.judging.guards import Policy, runtime_flags

    def v(timed, busy, flags=()):
        return SimpleNamespace(runtime_ms=timed, sol_ms=None, variant_timings={}, flags=list(flags),
                               runtime_stats={"median_ms": timed, "device_union_ms": busy})

    (flag,) = runtime_flags(v(0.0019, 0.07), None)
    assert flag.startswith("side_stream_unjoined") and "0.07 ms" in flag and "36.8x" in flag
    assert runtime_flags(v(0.2, 0.5), None) == []  # 2.5x: concurrent honest work, under the ratio
    assert runtime_flags(v(0.001, 0.015), None) == []  # a few microseconds: under the margin
    assert runtime_flags(v(0.2, None), None) == []  # no device clock (CPU, or the clock off)
    assert runtime_flags(v(0.0019, 0.07, ["side_stream_unjoined: 100 of 100 timed calls"]), None) == []  # said once
    assert runtime_flags(v(0.0019, 0.07), None, Policy(disabled={"side_stream_unjoined"})) == []
    # calls counted unjoined are reported to the device-wide sync; the calling stream's own clock
    # still shows the launch alone (an H200 judgement of g11b: 389 of 393 counted, re-check none)
    late = v(0.0584, 0.0544)
    assert runtime_flags(late, None) == []
    late.runtime_stats["stream_ms"] = 0.0021
    (flag,) = runtime_flags(late, None)
    assert flag.startswith("side_stream_unjoined") and "0.0021 ms the calling stream waited for" in flag
    honest = v(0.2, 0.19)
    honest.runtime_stats["stream_ms"] = 0.198
    assert runtime_flags(honest, None) == []


def _names(src: str) -> list[str]:
    return [f.split(":", 1)[0] for f in static_flags(KERNEL + src, "cpp")]


def test_settings_assignments_are_changes_settings_not_patches():
    """CUDA-L1's published kernels set cudnn and TF32 options and the compilers' configs by
    assignment: process-wide settings the judge resets (a hazard), not a patched library."""
    for src in ("import torch\ntorch.backends.cudnn.benchmark = True\n",
                "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n",
                "import torch\ntorch._inductor.config.coordinate_descent_tuning = True\n",
                "import torch\ntorch._dynamo.config.cache_size_limit += 4\n",
                "import torch\nm = torch.backends.cuda.matmul\nm.allow_tf32 = True\n",  # through an alias
                "import torch._inductor.config as cfg\ncfg.max_autotune = True\n",
                "from torch.backends import cudnn\ncudnn.benchmark = True\n",
                "import torch\nsetattr(torch.backends.cudnn, 'deterministic', True)\n"):
        assert _names(src) == ["changes_settings"], src
    (flag,) = static_flags(KERNEL + "import torch\ntorch.backends.cudnn.benchmark = True\n", "cpp")
    assert flag == "changes_settings: assigns to torch.backends.cudnn.benchmark (a process-wide setting the judge owns and resets)"
    m = static_flags(KERNEL + "import torch\nm = torch.backends.cuda.matmul\nm.allow_tf32 = True\n", "cpp")
    assert "torch.backends.cuda.matmul.allow_tf32" in m[0]


def test_library_code_replaced_is_still_patches_library():
    for src in ("import torch\ntorch.allclose = lambda *a, **k: True\n",
                "import torch\ndef f(*a): return True\ntorch.allclose = f\n",
                "import time\ntime.perf_counter = lambda: 0.0\n",
                "import torch\ntorch.backends.cudnn = None\n",  # the settings' module itself
                "import torch\ntorch.backends.cudnn.is_acceptable = lambda t: True\n",  # a function under torch.backends
                "import torch\ndef ok(t): return True\ntorch.backends.cudnn.is_acceptable = ok\n",
                "import torch\ndel torch.backends.cudnn.benchmark\n",
                "import torch\ndelattr(torch.backends.cudnn, 'benchmark')\n",
                "import torch\nT = torch.Tensor\nT.add = None\n",
                "from torch.nn import functional as Fn\nFn.relu = None\n"):
        assert _names(src) == ["patches_library"], src


def test_the_environment_is_environment_access_not_introspection():
    for src in ("import os\nos.environ['TORCH_CUDA_VERBOSE'] = '0'\n",
                "import os\nverbose = os.environ.get('TORCH_EXTENSIONS_VERBOSE', '0') == '1'\n",
                "import os\nenv = getattr(os, 'environ')\n"):
        assert _names(src) == ["environment_access"], src
    assert _names("import sys\nf = sys._getframe(1)\n") == ["introspection"]  # the rest as before


def test_the_passthrough_guard_runs_with_timing_off(tmp_path):
    """--no-timing checks correctness only, not less: the candidate's forward is still profiled once
    (on a checked set), so a library passthrough is flagged as it is with timing on."""
    from kbench_lib.core.candidates import load_candidate
    from kbench_lib.judging.pipeline import JudgeOptions, judge
    from kbench_lib.suite.problems import load_problem

    from conftest import REPO

    cand = tmp_path / "relu.py"
    cand.write_text("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                    "        return torch.clamp_min(x, 0.0)\n")
    v = judge(load_problem(REPO / "problems" / "level1" / "51_ReLU.py"), load_candidate(cand), JudgeOptions(device="cpu", timing=False))
    assert v.correct and v.runtime_ms is None
    assert any(f.startswith("library_passthrough") for f in v.flags), v.flags
