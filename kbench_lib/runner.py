"""Old home of :mod:`kbench_lib.batch.runner`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.runner``, ``from kbench_lib.runner import X`` and patching ``kbench_lib.runner.X`` reach the module itself."""
import sys

from .batch import runner as _moved

sys.modules[__name__] = _moved
