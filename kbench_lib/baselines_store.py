"""Old home of :mod:`kbench_lib.suite.baselines_store`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.baselines_store``, ``from kbench_lib.baselines_store import X`` and patching ``kbench_lib.baselines_store.X`` reach the module itself."""
import sys

from .suite import baselines_store as _moved

sys.modules[__name__] = _moved
