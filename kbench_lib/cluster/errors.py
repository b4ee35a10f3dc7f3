"""What stops a batch on a Ray cluster (imported without Ray, so the CLI can catch it)."""
from __future__ import annotations

from ..generation.errors import MissingExtra


class ClusterError(RuntimeError):
    """The cluster cannot finish the batch: no judging capacity came up (no GPU, every node lost
    for longer than the recovery limit) or the connection to Ray broke. Every verdict already
    recorded stays; running again with the same run id resumes."""


class MissingRay(MissingExtra):
    """``--ray`` without Ray installed."""

    def __init__(self):
        ImportError.__init__(self, "--ray needs the 'ray' package: pip install 'kbench[ray]' (or pip install ray) "
                                   "on the driver and on every node of the cluster")


def import_ray():
    try:
        import ray
    except ImportError as e:
        raise MissingRay() from e
    return ray
