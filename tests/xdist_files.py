"""How ``make test`` and ``make test-unit`` spread tests over pytest-xdist workers (``-n 2 --dist
loadfile``; ``make test`` runs the notebooks in the same pool, see the Makefile).

Each test file runs whole, in its order, on one worker, so that its module fixtures (a Ray cluster,
prebuilt C++ candidates) are made once. Files using one of :data:`SHARED_SESSION_FIXTURES` form a
single unit as well: a session fixture is made once per worker, and ``cpu_run`` judges a small run
(C++ builds, torch.compile) that takes longer than most files. The notebooks (nbval) are one unit,
run in their order: the analysis notebooks read the runs the ones before them wrote. Units are
handed out longest first as far as :data:`LONG_FIRST` knows them (a hint only: a unit missing
from it runs all the same), so that no long unit starts last while the other worker idles.

(pytest-xdist's ``--dist loadgroup`` would do the grouping from ``xdist_group`` marks, but with
pytest 9 its group suffix no longer reaches the test ids, so the marks group nothing.)
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

SHARED_SESSION_FIXTURES = ("cpu_run",)
# about a minute or more each on a 2-core CPU machine without a GPU, longest first (the notebooks: 4 to 5 min)
NOTEBOOKS = "notebooks"
LONG_FIRST = (
    NOTEBOOKS,
    "cpu_run",
    "tests/test_judge_cpu.py",
    "tests/test_cluster.py",
    "tests/test_variants.py",
    "tests/test_baselines.py",
    "tests/adversarial/test_adversarial_cpu.py",
    "tests/test_generation_e2e.py",
    "tests/test_generation_examples.py",
    "tests/test_strategies_e2e.py",
)


class FileScheduling(LoadScopeScheduling):
    """``LoadScopeScheduling`` with a file (or a shared session fixture's files) as the unit."""

    def __init__(self, config, log=None):
        super().__init__(config, log)
        self._root = Path(config.rootpath)
        self._units: dict[str, str] = {}

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        if path.endswith(".ipynb"):
            return NOTEBOOKS
        if path not in self._units:
            self._units[path] = path
            try:
                text = (self._root / path).read_text()
            except (OSError, UnicodeDecodeError):
                text = ""
            for name in SHARED_SESSION_FIXTURES:
                if re.search(rf"\b{name}\b", text):
                    self._units[path] = name
                    break
        return self._units[path]

    def _assign_work_unit(self, node) -> None:
        """The next unit: the first in :data:`LONG_FIRST` still waiting, else the first waiting in the
        order of collection (LoadScopeScheduling's reordering by test count is turned off below)."""
        rank = {unit: i for i, unit in enumerate(LONG_FIRST)}
        first = min(self.workqueue, key=lambda unit: rank.get(unit, len(rank)))  # the earliest of equals
        self.workqueue.move_to_end(first, last=False)
        super()._assign_work_unit(node)


class XdistFiles:
    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config, log):
        if config.getvalue("dist") != "loadfile":
            return None
        config.option.loadscopereorder = False
        return FileScheduling(config, log)
