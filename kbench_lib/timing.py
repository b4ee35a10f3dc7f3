"""Old home of :mod:`kbench_lib.measure.timing`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.timing``, ``from kbench_lib.timing import X`` and patching ``kbench_lib.timing.X`` reach the module itself."""
import sys

from .measure import timing as _moved

sys.modules[__name__] = _moved
