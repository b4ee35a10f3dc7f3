"""``python -m kbench_lib.cli``: the ``kbench`` command."""
import sys

from . import main

sys.exit(main())
