"""Old home of :mod:`kbench_lib.measure.profiling`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.profiling``, ``from kbench_lib.profiling import X`` and patching ``kbench_lib.profiling.X`` reach the module itself."""
import sys

from .measure import profiling as _moved

sys.modules[__name__] = _moved
