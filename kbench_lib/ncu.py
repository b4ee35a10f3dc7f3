"""Old home of :mod:`kbench_lib.measure.ncu`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.ncu``, ``from kbench_lib.ncu import X`` and patching ``kbench_lib.ncu.X`` reach the module itself."""
import sys

from .measure import ncu as _moved

sys.modules[__name__] = _moved
