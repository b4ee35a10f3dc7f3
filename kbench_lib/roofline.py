"""Old home of :mod:`kbench_lib.suite.roofline`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.roofline``, ``from kbench_lib.roofline import X`` and patching ``kbench_lib.roofline.X`` reach the module itself."""
import sys

from .suite import roofline as _moved

sys.modules[__name__] = _moved
