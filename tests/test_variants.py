"""Derived variants (kbench_lib.suite.variants): which constants are sizes, what is derived, validation,
and the judge rejecting shape-specialised kernels on the derived shapes."""
import ast

import pytest
import torch

from conftest import FIXTURES
from kbench_lib.suite import variants
from kbench_lib.core.candidates import load_candidate
from kbench_lib.suite.lint import lint_problem
from kbench_lib.suite.problems import instantiate, load_problem

DERIVED = FIXTURES / "derived"

CONV = '''
import torch
import torch.nn as nn

batch_size = 8
in_channels = 6
out_channels = 10
height = 24
width = 40
kernel_size = 3
stride = 2
dim = 1
eps = 1e-5
{extra}

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, dim, eps):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride)
        self.dim, self.eps = dim, eps

    def forward(self, x):
        y = self.conv(x)
        return y / (y.abs().sum(dim=self.dim, keepdim=True) + 1.0 + self.eps)


def get_inputs():
    shape = (batch_size, in_channels, height, width)
    return [torch.randn(*shape)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, dim, eps]
'''


def _write(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(source)
    return load_problem(path)


@pytest.fixture(autouse=True)
def fresh_memory_cache():
    variants._MEMORY.clear()
    yield
    variants._MEMORY.clear()


def test_sizes_are_what_shapes_the_inputs_and_output_widths(tmp_path):
    p = _write(tmp_path, "1_Conv.py", CONV.format(extra=""))
    sizes, inputs, notes = variants.size_constants(p)
    # through the local `shape`; out_channels by its name; kernel, stride, dim and eps left alone
    assert sizes == ["batch_size", "in_channels", "out_channels", "height", "width"] and not notes
    assert inputs == ["batch_size", "in_channels", "height", "width"]
    _, cands, _ = variants.candidates(p, small=False)
    base = variants.shape_constants(ast.parse(p.source))
    for c in cands:
        assert set(c) <= set(sizes)  # a constant that is not a size is never changed
        assert all(3 <= v < base[k] for k, v in c.items())
    a, b = cands[:2]
    assert all(v % 2 == 1 for v in [*a.values(), *b.values()])  # odd: never a power of two
    assert a == dict(batch_size=5, in_channels=3, out_channels=7, height=11, width=29)
    assert b == dict(batch_size=3, in_channels=3, out_channels=5, height=17, width=19)
    assert a["height"] / a["width"] != b["height"] / b["width"] != 24 / 40  # another aspect ratio


def test_upstream_tuple_shape_constant_is_a_size(tmp_path, monkeypatch):
    """Upstream loss files keep the row shape in a tuple (``input_shape = (4096,)``) next to a
    reduction ``dim = 1``: the tuple's elements are sizes, the dim is not."""
    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    src = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2, dim=1)

batch_size = 16
input_shape = (256,)
dim = 1

def get_inputs():
    return [torch.randn(batch_size, *input_shape), torch.randn(batch_size, *input_shape)]

def get_init_inputs():
    return []
"""
    p = _write(tmp_path, "94_MSELoss.py", src)
    assert variants.size_constants(p)[0] == ["batch_size", "input_shape"]
    configs = p.configs(small=True)
    assert [c.overrides for c in configs[1:]] == [dict(batch_size=11, input_shape=(127,)), dict(batch_size=7, input_shape=(191,))]
    variants._MEMORY.clear()  # from the disk cache: the tuple stays a tuple
    assert [c.overrides for c in load_problem(p.path).configs(small=True)[1:]] == [c.overrides for c in configs[1:]]


def test_sizes_assigned_together_are_sizes_and_their_overrides_take_effect(tmp_path, monkeypatch):
    """``rows, cols = 8192, 8192`` (and SMALL without SMALL_VARIANTS): both names are sizes, the
    derived variants change them, and an override of a tuple-assigned name reaches the inputs."""
    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    p = load_problem(DERIVED / "4_Row_Sum_Tuple.py")
    assert variants.size_constants(p) == (["rows", "cols"], ["rows", "cols"], [])
    assert variants.needs_derivation(p, small=True) and not variants.needs_derivation(p, small=False)
    configs = p.configs(small=True)
    assert [c.name for c in configs] == ["small", "small_derived0", "small_derived1"]
    assert [c.overrides for c in configs[1:]] == [dict(rows=47, cols=511), dict(rows=31, cols=767)]
    for c in configs:
        (x,) = instantiate(p, c.overrides)["get_inputs"]()
        assert tuple(x.shape) == (c.overrides["rows"], c.overrides["cols"])


def test_chained_and_annotated_assignments_are_sizes(tmp_path):
    src = """
import torch
import torch.nn as nn

batch_size: int = 16
height = width = 24
eps, dim = 1e-5, 1
scale: float = 2.0

class Model(nn.Module):
    def forward(self, x):
        return x * scale / (x.abs().sum(dim=dim, keepdim=True) + eps)

def get_inputs():
    return [torch.randn(batch_size, height, width)]

def get_init_inputs():
    return []
"""
    p = _write(tmp_path, "5_Chained.py", src)
    base = variants.shape_constants(ast.parse(p.source))
    assert base == dict(batch_size=16, height=24, width=24, dim=1)  # floats are never sizes
    assert variants.size_constants(p)[0] == ["batch_size", "height", "width"]
    a, b = variants.candidates(p, small=False)[1][:2]
    assert a == dict(batch_size=11, height=11, width=17) and b == dict(batch_size=7, height=17, width=11)
    (x,) = instantiate(p, a)["get_inputs"]()
    assert tuple(x.shape) == (11, 11, 17)


def test_size_constants_named_by_the_file_and_opt_out(tmp_path):
    named = _write(tmp_path, "2_Named.py", CONV.format(extra='SIZE_CONSTANTS = ["batch_size", "height"]'))
    sizes, _, _ = variants.size_constants(named)
    assert sizes == ["batch_size", "height"]
    assert all(set(c) <= {"batch_size", "height"} for c in variants.candidates(named, False)[1])
    off = _write(tmp_path, "3_Off.py", CONV.format(extra="DERIVE_VARIANTS = False"))
    assert not off.derive_variants and not variants.needs_derivation(off, small=True)
    assert [c.name for c in off.configs(small=True)] == ["small"]
    report = lint_problem(off, small=True, require_extensions=False, lowp=False)
    assert report.ok and report.derived == [] and "DERIVE_VARIANTS = False" in report.notes[0]


def test_upstream_file_gets_two_validated_variants(tmp_path, monkeypatch):
    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    p = load_problem(DERIVED / "2_LayerNorm_Upstream.py")
    assert p.variants == () and p.small == {}
    configs = p.configs(small=True)
    assert [c.name for c in configs] == ["small", "small_derived0", "small_derived1"]
    assert [c.derived for c in configs] == [False, True, True]
    assert configs[1].overrides == dict(batch_size=3, features=7, dim1=23, dim2=15)
    assert configs[2].overrides == dict(batch_size=3, features=11, dim1=15, dim2=23)
    ns = instantiate(p, configs[1].overrides)  # the model follows: normalized_shape from the same constants
    assert ns["get_init_inputs"]() == [(7, 23, 15)]
    # deterministic, and cached on disk: a fresh process (empty memory cache) reads the same result
    variants._MEMORY.clear()
    assert [c.overrides for c in load_problem(p.path).configs(small=True)] == [c.overrides for c in configs]
    assert len(list((tmp_path / "cache" / "variants").glob("*.json"))) == 1
    report = lint_problem(p, small=True, require_extensions=False, lowp=False)
    assert report.ok, report.issues
    assert [d["config"] for d in report.derived] == ["small_derived0", "small_derived1"]


def test_failing_derived_variant_is_dropped_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    # the model only accepts an even number of columns: every odd derived width fails to run
    src = (DERIVED / "1_Row_Sum.py").read_text().replace(
        "return x.sum(dim=-1)", "return x.view(x.shape[0], -1, 2).sum(dim=(1, 2))")
    p = _write(tmp_path, "1_Row_Sum.py", src)
    d = variants.derive(p, small=True)
    kept = [c.overrides for c in d.configs]
    assert kept == [dict(ROWS=47, COLS=1024), dict(ROWS=31, COLS=1024)]  # the rows-only fallback
    dropped = [n for n in d.notes if "dropped" in n]
    assert len(dropped) == 2 and all("COLS=" in n and "RuntimeError" in n for n in dropped)


def test_verdict_names_declared_and_derived_variants_and_carries_the_drop_notes(tmp_path, monkeypatch, fast_cpu_opts):
    from kbench_lib.core.candidates import Candidate
    from kbench_lib.judging.pipeline import judge

    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    src = (DERIVED / "1_Row_Sum.py").read_text().replace(
        "return x.sum(dim=-1)", "return x.view(x.shape[0], -1, 2).sum(dim=(1, 2))")
    p = _write(tmp_path, "1_Row_Sum.py", src)
    cand = Candidate(
        "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return x.view(x.shape[0], -1, 2).sum(dim=(1, 2))\n", backend="torch")
    fast_cpu_opts.timing = False
    v = judge(p, cand, fast_cpu_opts)
    assert v.correct, v.message
    assert v.variants_declared == [] and v.variants_derived == ["small_derived0", "small_derived1"]
    assert v.variants_checked == 2
    assert sum("dropped" in n for n in v.notes) == 2


def test_problem_whose_variants_cannot_be_derived_fails_lint(tmp_path, monkeypatch):
    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    src = (DERIVED / "1_Row_Sum.py").read_text().replace("SMALL = dict(ROWS=64, COLS=1024)", "SMALL = dict(ROWS=2, COLS=2)")
    p = _write(tmp_path, "1_Tiny.py", src)
    report = lint_problem(p, small=True, require_extensions=False, lowp=False)
    assert not report.ok
    assert any(i.check == "variants" and "0 derived" in i.reason for i in report.issues)


def test_derived_sizes_never_need_more_memory_than_the_base(tmp_path):
    """An 8192 x 8192 problem's variants fit where it fits: every input is at most as large."""
    src = (DERIVED / "3_Row_Sum_Upstream.py").read_text().replace("batch_size = 4096", "batch_size = 8192")
    p = _write(tmp_path, "1_Big.py", src)
    assert variants.needs_derivation(p, small=False)
    _, cands, _ = variants.candidates(p, small=False)

    def numel(overrides):
        ns = instantiate(p, overrides)
        with torch.device("meta"):
            return sum(t.numel() for t in ns["get_inputs"]())

    assert cands and all(numel(c) <= numel({}) for c in cands)
    assert cands[0] == dict(batch_size=6143, dim=4095) and cands[1] == dict(batch_size=4095, dim=6143)


def test_suite_problems_declare_their_variants_so_nothing_is_derived():
    p = load_problem(FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    assert not variants.needs_derivation(p, small=True) and not variants.needs_derivation(p, small=False)
    assert not any(c.derived for c in p.configs(small=True))


# ----- the judge on derived shapes (real builds, isolated processes)

ROW_SUM_CPP = ("row_sum_cpp.py", "row_sum_cpp_fixed_1024.py", "row_sum_cpp_pow2_blocks.py")


@pytest.fixture(scope="module")
def row_sum_cpp_built():
    """The three C++ row sums built at once, two at a time (the build is not what these tests are
    about, and one at a time it is most of their minute and a half)."""
    from kbench_lib.judging.pipeline import JudgeOptions
    from kbench_lib.batch.runner import prebuild

    built = prebuild([load_candidate(DERIVED / n) for n in ROW_SUM_CPP], "cpu", JudgeOptions(device="cpu"), jobs=2, progress=False)
    assert not [b for b in built.values() if b.failure], [b.message for b in built.values() if b.failure]


def _judge_row_sum(name, opts):
    from kbench_lib.judging.pipeline import judge

    return judge(load_problem(DERIVED / "1_Row_Sum.py"), load_candidate(DERIVED / name), opts)


@pytest.mark.slow
@pytest.mark.parametrize("name, failures", [
    ("row_sum_cpp_fixed_1024.py", ("shape_mismatch",)),
    ("row_sum_cpp_pow2_blocks.py", ("output_mismatch",)),
])
def test_cpu_shape_specialised_cpp_candidate_is_rejected_on_a_derived_variant(name, failures, fast_cpu_opts, row_sum_cpp_built):
    v = _judge_row_sum(name, fast_cpu_opts)
    assert not v.correct and v.failure in failures, (v.failure, v.message)
    assert "small_derived" in v.message  # caught on a derived shape, not on the SMALL one it was made for
    assert v.variants_declared == [] and v.variants_derived == ["small_derived0", "small_derived1"]


@pytest.mark.slow
def test_cpu_legitimate_cpp_candidate_is_accepted_on_every_derived_variant(fast_cpu_opts, row_sum_cpp_built):
    from kbench_lib.scoring.records import SCHEMA, row_from_verdict

    v = _judge_row_sum("row_sum_cpp.py", fast_cpu_opts)
    assert v.correct and v.flags == [], v.message
    assert v.variants_checked >= 2 and v.variants_derived == ["small_derived0", "small_derived1"]
    row = row_from_verdict(v, run_id="r", model="m")
    assert row["variants_derived"] == ["small_derived0", "small_derived1"] and row["variants_declared"] == []
    assert {"variants_declared", "variants_derived"} <= set(SCHEMA.names)


@pytest.mark.slow
@pytest.mark.parametrize("name, correct", [("row_sum_cpp.py", True), ("row_sum_cpp_fixed_1024.py", False)])
def test_cpu_cpp_candidate_judged_on_variants_derived_from_tuple_assigned_sizes(name, correct, fast_cpu_opts, row_sum_cpp_built):
    """``rows, cols = 8192, 8192``: the C++ row sum that bakes in SMALL's row length (1024) is caught
    on a derived shape; its twin that reads the sizes from its input passes every shape."""
    from kbench_lib.judging.pipeline import judge

    fast_cpu_opts.timing = False
    v = judge(load_problem(DERIVED / "4_Row_Sum_Tuple.py"), load_candidate(DERIVED / name), fast_cpu_opts)
    assert v.variants_declared == [] and v.variants_derived == ["small_derived0", "small_derived1"]
    if correct:
        assert v.correct and v.flags == [] and v.variants_checked == 2, (v.failure, v.message, v.flags)
    else:
        assert not v.correct and v.failure in ("shape_mismatch", "output_mismatch", "runtime_error"), (v.failure, v.message)
        assert "small_derived" in v.message


@pytest.mark.gpu
@pytest.mark.parametrize("name, correct", [("row_sum_triton.py", True), ("row_sum_triton_fixed_8192.py", False)])
def test_gpu_full_size_specialised_triton_kernel_rejected_on_derived_shapes(name, correct):
    """An upstream-format problem (no VARIANTS) at full size on the GPU: the Triton kernel that bakes
    in the 8192 row length without a mask fails on a derived shape; the masked one passes."""
    from kbench_lib.judging.pipeline import JudgeOptions, judge

    p = load_problem(DERIVED / "3_Row_Sum_Upstream.py")
    opts = JudgeOptions(device="cuda", small=False, timing_budget_s=1.0)
    v = judge(p, load_candidate(DERIVED / name), opts)
    assert v.variants_derived == ["derived0", "derived1"] and v.variants_declared == []
    if correct:
        assert v.correct and v.flags == [] and v.variants_checked == 2, (v.failure, v.message, v.flags)
    else:
        assert not v.correct and v.failure in ("shape_mismatch", "output_mismatch"), (v.failure, v.message)
        assert "derived" in v.message
