"""Old home of :mod:`kbench_lib.measure.tensorfile`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.tensorfile``, ``from kbench_lib.tensorfile import X`` and patching ``kbench_lib.tensorfile.X`` reach the module itself."""
import sys

from .measure import tensorfile as _moved

sys.modules[__name__] = _moved
