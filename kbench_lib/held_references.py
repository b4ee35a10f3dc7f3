"""Old home of :mod:`kbench_lib.batch.held_references`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.held_references``, ``from kbench_lib.held_references import X`` and patching ``kbench_lib.held_references.X`` reach the module itself."""
import sys

from .batch import held_references as _moved

sys.modules[__name__] = _moved
