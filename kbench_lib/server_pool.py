"""Old home of :mod:`kbench_lib.isolation.server_pool`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.server_pool``, ``from kbench_lib.server_pool import X`` and patching ``kbench_lib.server_pool.X`` reach the module itself."""
import sys

from .isolation import server_pool as _moved

sys.modules[__name__] = _moved
