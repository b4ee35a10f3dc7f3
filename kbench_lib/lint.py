"""Old home of :mod:`kbench_lib.suite.lint`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.lint``, ``from kbench_lib.lint import X`` and patching ``kbench_lib.lint.X`` reach the module itself."""
import sys

from .suite import lint as _moved

sys.modules[__name__] = _moved
