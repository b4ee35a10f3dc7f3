"""Where kbench keeps what it builds and caches (no torch here: a lane process computes its fork
server's environment, and starts its zygote, before it imports torch)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    root = os.environ.get("KBENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kbench")
    return Path(root)


__all__ = ["cache_root"]
