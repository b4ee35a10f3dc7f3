"""Old home of :mod:`kbench_lib.judging.build`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.build``, ``from kbench_lib.build import X`` and patching ``kbench_lib.build.X`` reach the module itself."""
import sys

from .judging import build as _moved

sys.modules[__name__] = _moved
