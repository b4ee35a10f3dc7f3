"""The prompts' worked examples are correct kernels: each is judged against the example problem."""
import pytest

from kbench_lib.core.candidates import Candidate
from kbench_lib.generation.prompts import TEMPLATES, example_source
from kbench_lib.judging.pipeline import judge
from kbench_lib.suite.problems import load_problem

pytestmark = pytest.mark.slow


def _verdict(backend, opts):
    problem = load_problem(TEMPLATES / "example_problem.py", level="examples")
    return judge(problem, Candidate(source=example_source(backend), backend=backend, name=f"example_{backend}"), opts)


@pytest.mark.parametrize("backend", ["triton", "cpp"])
def test_cpu_examples_are_correct(backend, fast_cpu_opts):
    v = _verdict(backend, fast_cpu_opts)
    assert v.correct and v.failure is None and not v.flags, v.message


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "triton", "cute", "tilelang"])
def test_gpu_examples_are_correct(backend):
    from kbench_lib.core import dsl_packages
    from kbench_lib.judging.pipeline import JudgeOptions

    if dsl_packages.is_dsl(backend) and not dsl_packages.installed(backend):
        pytest.skip(f"{dsl_packages.PACKAGES[backend].distribution} is not installed (pip install 'kbench[dsl]')")
    v = _verdict(backend, JudgeOptions(device="cuda", timing_budget_s=0.5))
    assert v.correct and v.failure is None and not v.flags, v.message
