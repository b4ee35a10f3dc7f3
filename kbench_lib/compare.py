"""Old home of :mod:`kbench_lib.measure.compare`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.compare``, ``from kbench_lib.compare import X`` and patching ``kbench_lib.compare.X`` reach the module itself."""
import sys

from .measure import compare as _moved

sys.modules[__name__] = _moved
