"""The same batch on a Ray cluster (``kbench run --ray [ADDRESS|auto]``): judging actors that own a
GPU each, builds as CPU tasks on the judging node, language-model requests as an asynchronous
actor, and a driver that alone writes the records. A judge lost with its node has its unfinished
work judged elsewhere. See docs/CLUSTER.md.

Ray is an optional extra (``pip install 'kbench[ray]'``); nothing here imports it until a batch
runs.
"""
from __future__ import annotations

from .errors import ClusterError, MissingRay


def run_batch_on_ray(*args, **kwargs):
    """See :func:`kbench_lib.cluster.driver.run_batch_on_ray`."""
    from .driver import run_batch_on_ray as run

    return run(*args, **kwargs)


def cluster_device(address: str | None, device: str = "auto") -> str:
    """See :func:`kbench_lib.cluster.connect.cluster_device`."""
    from .connect import cluster_device as find

    return find(address, device)


__all__ = ["ClusterError", "MissingRay", "cluster_device", "run_batch_on_ray"]
