"""Old home of :mod:`kbench_lib.measure.tensors`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.tensors``, ``from kbench_lib.tensors import X`` and patching ``kbench_lib.tensors.X`` reach the module itself."""
import sys

from .measure import tensors as _moved

sys.modules[__name__] = _moved
