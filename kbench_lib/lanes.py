"""Old home of :mod:`kbench_lib.batch.lanes`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.lanes``, ``from kbench_lib.lanes import X`` and patching ``kbench_lib.lanes.X`` reach the module itself."""
import sys

from .batch import lanes as _moved

sys.modules[__name__] = _moved
