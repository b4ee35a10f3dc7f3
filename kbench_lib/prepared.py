"""Old home of :mod:`kbench_lib.judging.prepared`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.prepared``, ``from kbench_lib.prepared import X`` and patching ``kbench_lib.prepared.X`` reach the module itself."""
import sys

from .judging import prepared as _moved

sys.modules[__name__] = _moved
