"""Old home of :mod:`kbench_lib.suite.problems`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.problems``, ``from kbench_lib.problems import X`` and patching ``kbench_lib.problems.X`` reach the module itself."""
import sys

from .suite import problems as _moved

sys.modules[__name__] = _moved
