"""Old home of :mod:`kbench_lib.batch.overlap`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.overlap``, ``from kbench_lib.overlap import X`` and patching ``kbench_lib.overlap.X`` reach the module itself."""
import sys

from .batch import overlap as _moved

sys.modules[__name__] = _moved
