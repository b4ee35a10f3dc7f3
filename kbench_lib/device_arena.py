"""Old home of :mod:`kbench_lib.measure.device_arena`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.device_arena``, ``from kbench_lib.device_arena import X`` and patching ``kbench_lib.device_arena.X`` reach the module itself."""
import sys

from .measure import device_arena as _moved

sys.modules[__name__] = _moved
