"""Joining a Ray cluster and deciding how many judges it gets."""
from __future__ import annotations

from ..judging.pipeline import JudgeOptions
from .errors import ClusterError, import_ray

NAMESPACE = "kbench"


def connect(address: str | None):
    """(ray, True when this call connected): ``address`` None or "" follows ``ray.init()``'s rule
    (``RAY_ADDRESS``, else a cluster started on this machine with ``ray start``, else a new local
    runtime on 127.0.0.1); "auto" must find a running cluster; ``HOST:PORT`` or ``ray://...``
    names one. An existing connection (a notebook that called ``ray.init``) is used as it is."""
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    kwargs = {"namespace": NAMESPACE, "log_to_driver": False}
    if address:
        kwargs["address"] = address
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError) as e:  # RuntimeError: no node of the cluster on this machine (use ray://)
        hint = "" if not address or address.startswith("ray://") or address == "auto" else \
            " (from a machine that is not a node of the cluster, use Ray Client: ray://HEAD:10001)"
        raise ClusterError(f"cannot reach the Ray cluster at {address or 'RAY_ADDRESS'}: {e}{hint}") from e
    return ray, True


def judge_kind(ray, opts: JudgeOptions) -> str:
    """``cuda`` when the judges take GPUs, ``cpu`` when they judge on the CPU (the C++ backend,
    Triton's interpreter): ``--device auto`` follows the cluster, not the driver's machine."""
    gpus = int(ray.cluster_resources().get("GPU", 0))
    want = opts.device or "auto"
    if want == "auto":
        return "cuda" if gpus else "cpu"
    if want.startswith("cuda"):
        if not gpus:
            raise ClusterError("--device cuda was asked for, but the Ray cluster has no GPU (ray start --num-gpus, or CUDA_VISIBLE_DEVICES on the nodes)")
        return "cuda"
    return "cpu"


def cluster_device(address: str | None, device: str = "auto") -> str:
    """The device a batch on the cluster at ``address`` judges on (``cuda`` or ``cpu``), for a
    caller that picks problems and options by device before the batch starts (the notebooks) and
    may itself have no GPU. Leaves the connection open for the batch."""
    ray, _ = connect(address)
    return judge_kind(ray, JudgeOptions(device=device))


def judge_count(ray, kind: str, gpus: int | str | None, judges: int | None) -> int:
    """How many judging actors: one per GPU of the cluster (at most ``gpus`` when it is a number);
    on the CPU ``judges``, else one per node."""
    if kind == "cuda":
        have = int(ray.cluster_resources().get("GPU", 0))
        return have if gpus in (None, "all") else max(1, min(int(gpus), have))
    if judges:
        return int(judges)
    return max(1, sum(1 for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= 1))


def judge_options(kind: str) -> dict:
    """Ray options of a judging actor: one GPU it owns for timing (and a CPU), or one CPU. A threaded
    actor: the driver's calls (jobs in, verdicts out) run beside its lane's judging."""
    opts = {"num_cpus": 1, "num_gpus": 1 if kind == "cuda" else 0, "max_restarts": 0, "max_task_retries": 0,
            "max_concurrency": 4}
    if kind != "cuda":
        opts["scheduling_strategy"] = "SPREAD"
    return opts


def build_options(kind: str, node_id: str, gpu: str | None) -> dict:
    """Ray options of a build task for a judge on ``node_id``: on that node (its build cache is the
    one that judge reads), and for a GPU judge that GPU visible, so the build targets its
    architecture, without taking the GPU from Ray's scheduling.

    A build reserves no CPU from Ray: the driver bounds the builds running on a node itself
    (:func:`build_slots`). Reserved CPUs deadlocked a batch: when a node died, its judge's
    replacement took the last free CPU of a surviving node, and the builds that node's judges
    waited for could then never be scheduled."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    opts = {"num_cpus": 0, "num_gpus": 0, "max_retries": 0, "scheduling_strategy": NodeAffinitySchedulingStrategy(node_id, soft=False)}
    if kind == "cuda" and gpu:
        opts["runtime_env"] = {"env_vars": {"CUDA_VISIBLE_DEVICES": gpu, "RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1"}}
    return opts


def build_slots(ray, node_id: str, judges_there: int) -> int:
    """How many builds the driver runs at once on ``node_id``: the node's CPUs less one for each
    judge there, and never fewer than one (a node whose CPUs all judge still builds, one at a time)."""
    cpus = next((n.get("Resources", {}).get("CPU", 0) for n in ray.nodes() if n.get("NodeID") == node_id), 0)
    return max(1, int(cpus) - judges_there)
