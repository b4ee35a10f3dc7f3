"""What runs on the cluster's nodes: a judging actor per GPU (or per CPU judge), a build task per
candidate and node, a generation actor per language model. Plain classes and functions: the
driver (:mod:`.driver`) makes them Ray work with ``ray.remote(...).options(...)``, so this module
imports without Ray.

Each judging actor is one process that owns its GPU for timing (Ray gives it exactly one, as its
``cuda:0``, through ``CUDA_VISIBLE_DEVICES``). It judges exactly as the local runner does
with the same lane loop (:meth:`kbench_lib.batch.local_batch._Batch.work`, :mod:`.lane`): candidates
run in their own isolated processes, forked from this actor's own warm fork server
(:mod:`kbench_lib.isolation.forkserver`), started as the actor starts, and a candidate that kills
its process is a ``crash`` verdict. The reference side of a problem is prepared once per actor,
ahead of its first candidate where the lane can, and kept for the next candidates of that problem.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path

from ..core import cpu_sets
from ..judging.pipeline import JudgeOptions
from ..suite.problems import Problem


def local_device(kind: str) -> str:
    """The device a judging process uses: its one visible GPU, or the CPU."""
    return "cuda:0" if kind == "cuda" else "cpu"


def node_id() -> str | None:
    try:
        import ray

        return ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - outside Ray (a unit test of this class)
        return None


def initial_environ() -> dict[str, str] | None:
    """This process's environment as it was started (``/proc/self/environ``), before anything in
    it changed ``os.environ``; None where the system does not show it."""
    try:
        raw = Path("/proc/self/environ").read_bytes()
    except OSError:
        return None
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def undo_ray_thread_default() -> bool:
    """Takes back the ``OMP_NUM_THREADS`` Ray sets in an actor for its whole life, where the node's
    environment has none: the actor's CPUs (a judge asks Ray for one), so its torch and every
    process it starts (its fork server, the candidates' workers) would run their CPU work on one
    thread, where a local lane's use the cores of their lane. Ray's value is told from a node's own
    by the process's starting environment (a node's, or a ``runtime_env``'s, is there; Ray's is
    set later): it is dropped, and torch in this process sized to the cores it may use, as
    without it. True where it was taken back."""
    first = initial_environ()
    if first is None or "OMP_NUM_THREADS" in first or "OMP_NUM_THREADS" not in os.environ:
        return False
    del os.environ["OMP_NUM_THREADS"]
    import torch

    torch.set_num_threads(len(cpu_sets.allowed_cpus()))
    return True


class JudgeActor:
    """A judging process (see the module docstring): the local runner's lane loop in a thread of
    its own (:class:`.lane.ActorLane`), fed jobs with :meth:`put` and read with :meth:`verdicts`
    (a threaded actor: those calls run beside the lane's judging)."""

    def __init__(self, opts: JudgeOptions, kind: str):
        from .lane import ActorLane

        undo_ray_thread_default()
        self.device = local_device(kind)
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.set_device(0)
        # the lane starts its fork server at once and prepares the references of what it is sent
        # while the server starts, each problem's held while its samples come (within the local
        # runner's memory budgets): prepared again, it would draw fresh seeds and time the eager
        # baseline anew halfway through a problem's samples
        self._lane = ActorLane(opts, self.device)

    def info(self) -> dict:
        """Where this judge runs: node, host, pid, device and its name, the GPU it was given, the
        cores its workers keep to (None: every core), torch's threads and ``OMP_NUM_THREADS`` here
        (:func:`undo_ray_thread_default`), the judge's environment (versions, git sha)."""
        import torch

        from ..core.provenance import device_name, environment

        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        cpus = self._lane.cpus
        return {"node_id": node_id(), "host": socket.gethostname(), "pid": os.getpid(), "device": self.device,
                "device_name": device_name(self.device), "gpu": visible if self.device.startswith("cuda") else None,
                "cpus": cpu_sets.format_cpulist(cpus) if cpus else None, "threads": torch.get_num_threads(),
                "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "env": environment(self.device)}

    def put(self, jobs: list[tuple]) -> None:
        """Jobs to judge, in order (:meth:`.lane.ActorLane.put`)."""
        self._lane.put(jobs)

    def take_back(self) -> list:
        """Tokens of jobs taken back out of the lane's line unstarted (:meth:`.lane.ActorLane.take_back`)."""
        return self._lane.take_back()

    def verdicts(self, acknowledged: list, timeout: float) -> list[tuple]:
        """[(token, verdict)] the driver has not acknowledged, once there is one or after
        ``timeout`` seconds (:meth:`.lane.ActorLane.verdicts`): verdicts, never an exception, for
        the candidates; an exception when the lane itself stopped."""
        return self._lane.verdicts(acknowledged, timeout)

    def close(self) -> None:
        """Ends the lane (its references released) and stops this process's fork servers."""
        from ..isolation.sandbox import close_servers

        self._lane.close()
        close_servers()


def build_on_node(candidate, kind: str, opts: JudgeOptions) -> dict:
    """A build task: compiles ``candidate`` into this node's build cache (content-hashed, so the
    judging actor on this node finds it and does not build it again). For a GPU judge the driver
    starts it with that judge's GPU as its only visible one (the build targets that GPU's
    architecture). The verdict comes from the judge, which reads the cache (a compile error is
    remembered there too); a failed build comes back whole (``result``, its message and log), for
    the driver to send with the job, so that the judge does not build again what the cache does not
    remember (a build at its time limit, or one that sat idle)."""
    from ..judging.pipeline import build_candidate

    device = local_device(kind)
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():  # then the judge builds it itself
            return {"built": False, "reason": "no GPU visible to the build task"}
    b = build_candidate(candidate, device, opts)
    out = {"built": b.failure is None, "failure": b.failure, "seconds": round(b.seconds, 2), "cached": b.cached,
           "node_id": node_id()}
    if b.failure:
        out["result"] = b
    return out


class GenerationActor:
    """A language model's requests as Ray work: an asynchronous actor whose calls (one per problem)
    run concurrently on its event loop, at most the model's concurrency limit of them talking to
    the provider at once (:class:`kbench_lib.generation.LanguageModel`'s semaphore). Answers go
    through the same record/replay cache as a local run."""

    def __init__(self, spec: str, options: dict):
        from ..generation import language_model

        self.model = language_model(spec, {**options, "progress": False})

    async def samples(self, problem: Problem, indices: list[int]):
        return await self.model.problem_samples(problem, indices)


def driver_path(path: str | Path | None, default: Path) -> str:
    """An absolute path as the driver sees it (the generation actor runs on the driver's node)."""
    return str(Path(path or default).resolve())
