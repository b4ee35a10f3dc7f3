"""Old home of :mod:`kbench_lib.isolation.sandbox`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.sandbox``, ``from kbench_lib.sandbox import X`` and patching ``kbench_lib.sandbox.X`` reach the module itself."""
import sys

from .isolation import sandbox as _moved

sys.modules[__name__] = _moved
