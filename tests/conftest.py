import os
import shutil
from pathlib import Path

import pytest
import torch

# every command a test runs (kbench_lib.cli.main, `kbench` in a subprocess, a notebook's kernel) runs in
# its own process: a judge service (docs/SERVICE.md) is started only by the tests of it, in folders of their own
os.environ["KBENCH_SERVE"] = "off"

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist"):
        from xdist_files import XdistFiles

        config.pluginmanager.register(XdistFiles(), "kbench-xdist-files")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def build_cache(tmp_path_factory):
    """A build cache of the session's own, so tests never depend on what an earlier run built."""
    path = tmp_path_factory.mktemp("kbench-cache")
    old = os.environ.get("KBENCH_CACHE")
    os.environ["KBENCH_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("KBENCH_CACHE", None)
    else:
        os.environ["KBENCH_CACHE"] = old
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fixtures():
    return FIXTURES


@pytest.fixture
def scale_add_relu():
    from kbench_lib.suite.problems import load_problem

    return load_problem(FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py")


@pytest.fixture
def fast_cpu_opts():
    from kbench_lib.judging.pipeline import JudgeOptions

    return JudgeOptions(device="cpu", timing_budget_s=0.2, min_trials=10, max_trials=50, warmup_ms=1.0, run_timeout_s=60)


@pytest.fixture(scope="session")
def cpu_run(tmp_path_factory):
    """A small real CPU run (tests/analysis_run.py): (runs_root, run_id), judged once per session
    for the analysis notebooks' and the explorer's tests."""
    from analysis_run import make_cpu_run

    root = tmp_path_factory.mktemp("analysis-runs")
    return root, make_cpu_run(root)
