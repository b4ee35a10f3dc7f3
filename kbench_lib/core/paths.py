"""Where kbench keeps what it builds and caches, and where its package is (no torch here: a lane
process computes its fork server's environment, and starts its zygote, before it imports torch)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    root = os.environ.get("KBENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kbench")
    return Path(root)


def with_package_importable(env: dict[str, str]) -> dict[str, str]:
    """``env`` (changed in place, and returned) with this package's root first on ``PYTHONPATH``: a
    process started with it imports this ``kbench_lib`` whatever its cwd and however it was installed."""
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # kbench_lib/core/paths.py
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    return env


# where runs are written unless a command names a folder: $KBENCH_RUNS_ROOT (the test suite points it
# at a temporary folder, so that it never writes a user's runs), else the checkout's results/runs/
RUNS_ROOT = Path(os.environ.get("KBENCH_RUNS_ROOT") or Path(__file__).resolve().parents[2] / "results" / "runs")

__all__ = ["RUNS_ROOT", "cache_root", "with_package_importable"]
