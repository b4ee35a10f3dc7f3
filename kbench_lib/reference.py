"""Old home of :mod:`kbench_lib.suite.reference`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.reference``, ``from kbench_lib.reference import X`` and patching ``kbench_lib.reference.X`` reach the module itself."""
import sys

from .suite import reference as _moved

sys.modules[__name__] = _moved
