"""Old home of :mod:`kbench_lib.judging.config_checks`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.config_checks``, ``from kbench_lib.config_checks import X`` and patching ``kbench_lib.config_checks.X`` reach the module itself."""
import sys

from .judging import config_checks as _moved

sys.modules[__name__] = _moved
