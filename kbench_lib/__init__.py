"""kbench: build, judge, record and analyse machine-written GPU kernels (KernelBench-compatible).

Users import ``kbench_lib.lab`` (the kernel lab), ``kbench_lib.workflows`` (what the notebooks run)
and ``kbench_lib.cli`` (the ``kbench`` command, a module per command), the only modules at this
level; every other module lives in the subpackage of its concern (docs/LAYOUT.md maps them). This module imports nothing, so
that importing one submodule (a lane process's ``core.paths``, before torch) costs only that.
"""
__version__ = "0.1.0"
