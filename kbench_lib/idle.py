"""Old home of :mod:`kbench_lib.isolation.idle`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.idle``, ``from kbench_lib.idle import X`` and patching ``kbench_lib.idle.X`` reach the module itself."""
import sys

from .isolation import idle as _moved

sys.modules[__name__] = _moved
