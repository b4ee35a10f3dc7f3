"""A judging actor's lane: the local runner's lane loop (:meth:`kbench_lib.batch.local_batch._Batch.work`)
inside the actor, fed by the driver and read back by it.

The actor runs the lane loop a local GPU runs, in a thread of its own, over a one-lane
:class:`kbench_lib.batch.lanes.JudgeLanes`: its fork server starts with the actor, the references of
the problems waiting in its line are prepared while the server starts, and the next problem's
while a worker starts behind its gate. On a host of several GPUs its workers keep to its GPU's
share of the host's cores (:func:`judge_share`), as a local batch on every GPU gives each GPU's
workers, and its own torch threads do too.

- :meth:`ActorLane.put` gives it jobs (each with the driver's token for it) in the order sent;
- each verdict waits in an outbox, under its token, until the driver has read it and said so in its
  next :meth:`ActorLane.verdicts` call, so a reply lost on its way (an RPC lost with a node) is sent
  again, and the driver, which records a sample key only once, drops what it already has;
- a sample without a candidate (the model failed on the problem) needs no GPU: its verdict is made
  at once, as the local runner makes it;
- :meth:`ActorLane.take_back` takes the last job waiting in its line back out, unstarted, for a
  judge that ran dry at the end of a batch.

The driver sends a job once its build on this node is done (:meth:`.driver.Batch.build_ready`), so
the lane finds it in the build cache; a judge's first jobs go at once, and the lane builds them, or
waits for the node's build of the same source.
"""
from __future__ import annotations

import os
import threading
import traceback
from dataclasses import replace

from ..core import cpu_sets
from ..judging.pipeline import JudgeOptions
from ..suite.problems import Problem


def local_problem(problem: Problem) -> Problem:
    """``problem`` with a path that exists on this node and holds its source: the driver's path
    where this node has the same file (one checkout, a shared file system), else a copy written
    under the build cache, named after its content. The problem's key (level and file stem) is
    kept."""
    try:
        if problem.path.read_text() == problem.source:
            return problem
    except OSError:
        pass
    from ..judging.build import cache_root

    path = cache_root() / "problems" / problem.sha / problem.path.name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(problem.source)
        tmp.replace(path)
    return replace(problem, path=path)


class LaneStopped(RuntimeError):
    """The actor's lane loop ended with an error: this judge cannot go on (the driver replaces it)."""


def judge_share(device: str) -> tuple[int, ...] | None:
    """The cores a judge on ``device`` keeps to on a host of several GPUs
    (:func:`kbench_lib.core.cpu_sets.host_share`; None: every core), torch's thread pool in this
    process sized to them: the judge prepares its references here while the other GPUs' judges
    prepare theirs on the other shares."""
    share = cpu_sets.host_share(device) if device.startswith("cuda") else None
    if share:
        import torch

        torch.set_num_threads(len(share))
    return share


class ActorLane:
    """One device's lane loop in a thread of the judging actor (see the module docstring)."""

    def __init__(self, opts: JudgeOptions, device: str):
        from ..batch.lanes import JudgeLanes
        from ..batch.local_batch import _Batch

        lane = self
        self.device, self.opts = device, opts
        self._cond = threading.Condition()
        self._outbox: dict = {}  # token -> verdict, until the driver acknowledges it
        self._tokens: dict[int, object] = {}  # id of an arrival in the lane -> its token
        self._ended = False  # the lane loop has returned
        self._stopped: str | None = None  # why it ended with an error

        class _Lane(_Batch):
            def record_arrival(self, a, v) -> None:
                lane._deliver(lane._tokens.pop(id(a)), v)

        self.batch = _Lane(None, "ray", "", "single", opts, [device], 0, False, lane_processes=False)
        # one GPU of several on this host: its workers keep to its share of the host's cores, as
        # a local batch on every GPU gives them (the other GPUs' judges take the other shares)
        share = judge_share(device)
        self.cpus = share
        if share:
            self.batch.cpus = {device: share}
        self.batch.lanes = JudgeLanes(1, limit=1 << 20)  # the driver bounds what it sends (DEPTH)
        self.thread = threading.Thread(target=self._run, name=f"kbench-judge-{device}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.batch.work(0, self.device)
            failed = self.batch.failed
            why = "".join(traceback.format_exception(failed))[-3000:] if failed is not None else None
        except BaseException:  # noqa: BLE001 - reported to the driver, which replaces this judge
            why = traceback.format_exc()[-3000:]
        with self._cond:
            self._stopped = why
            self._ended = True
            self._cond.notify_all()

    def _deliver(self, token, verdict) -> None:
        with self._cond:
            self._outbox[token] = verdict
            self._cond.notify_all()

    def put(self, jobs: list[tuple]) -> None:
        """Jobs for the lane, in order: (token, problem, sample, error message, last[, failed
        build]), ``last`` when the driver sends this judge no further sample of that problem for
        now; a failed build (the :class:`~kbench_lib.judging.build_job.BuildResult` the build task
        on this node returned) is the candidate's build, as a local batch's build ahead is: not
        built again."""
        from concurrent.futures import Future

        from ..batch import verdicts
        from ..generation.samples import Arrival

        for token, problem, sample, err, last, *failed in jobs:
            problem = local_problem(problem)
            if sample is None or sample.candidate is None:
                self._deliver(token, verdicts._judge_one(problem, sample, err, None, self.device, self.opts))
                continue
            if failed and failed[0] is not None:
                done: Future = Future()
                done.set_result(failed[0])
                self.batch.builds[sample.candidate.sha] = done
            arrival = Arrival(problem, sample, None, last)
            self._tokens[id(arrival)] = token
            self.batch.lanes.put(arrival)

    def take_back(self) -> list:
        """Tokens of the jobs taken back out of the line unstarted: the last one waiting there
        (:meth:`kbench_lib.batch.lanes.JudgeLanes.take_waiting`), if any. The lane never judges
        them; the driver gives them to a judge that ran dry."""
        return [self._tokens.pop(id(a)) for a in self.batch.lanes.take_waiting(0)]

    def verdicts(self, acknowledged: list, timeout: float) -> list[tuple]:
        """[(token, verdict)] not yet acknowledged, once there is one or after ``timeout`` seconds
        (maybe none, and none at once after :meth:`close`); those in ``acknowledged`` the driver
        has, and are dropped first. Raises :class:`LaneStopped` once the lane loop has failed with
        nothing left to hand over."""
        with self._cond:
            for token in acknowledged:
                self._outbox.pop(token, None)
            self._cond.wait_for(lambda: self._outbox or self._ended, timeout=timeout)
            if not self._outbox and self._stopped is not None:
                raise LaneStopped(f"the judging lane stopped: {self._stopped}")
            return list(self._outbox.items())

    def close(self, timeout: float = 30.0) -> None:
        """Lets the lane finish what it holds, then end (its references are released as it ends)."""
        self.batch.lanes.close()
        self.thread.join(timeout)
