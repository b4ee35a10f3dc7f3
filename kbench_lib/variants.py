"""Old home of :mod:`kbench_lib.suite.variants`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.variants``, ``from kbench_lib.variants import X`` and patching ``kbench_lib.variants.X`` reach the module itself."""
import sys

from .suite import variants as _moved

sys.modules[__name__] = _moved
