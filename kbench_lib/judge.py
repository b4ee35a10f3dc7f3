"""Old home of :mod:`kbench_lib.judging.pipeline`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.judge``, ``from kbench_lib.judge import X`` and patching ``kbench_lib.judge.X`` reach the module itself."""
import sys

from .judging import pipeline as _moved

sys.modules[__name__] = _moved
