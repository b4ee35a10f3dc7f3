"""Old home of :mod:`kbench_lib.measure.head_start`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.head_start``, ``from kbench_lib.head_start import X`` and patching ``kbench_lib.head_start.X`` reach the module itself."""
import sys

from .measure import head_start as _moved

sys.modules[__name__] = _moved
