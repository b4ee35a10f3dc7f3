"""The lane's own process: ``python -m kbench_lib.batch.lane_process FD`` judges one GPU's lane of a
batch that :class:`kbench_lib.batch.lane_host.LaneHost` serves from the batch's process (the whole
story, and the batch's side of it, such as :func:`~kbench_lib.batch.lane_host.start`: :mod:`kbench_lib.batch.lane_host`).
Split from it so that the batch (:mod:`kbench_lib.batch.runner`) imports the host side and this
process imports the batch, not both each other.
"""
from __future__ import annotations

import faulthandler
import logging
import sys
import threading
import traceback
from multiprocessing.connection import Connection

from ..isolation import server_pool
from .lane_host import _LANE_CALLS, _TIMELINE


# --- the lane's process ---------------------------------------------------------------------------

class _Link:
    """The process's end of the socket: one request and its answer at a time."""

    def __init__(self, conn: Connection):
        self.conn, self.lock = conn, threading.Lock()

    def call(self, kind: str, *args):
        with self.lock:
            self.conn.send((kind, *args))
            status, value = self.conn.recv()
        if status == "error":
            raise value
        return value

    def tell(self, kind: str, *args) -> None:
        with self.lock:
            self.conn.send((kind, *args))


class _RemoteLanes:
    """The batch's lanes as one lane's process sees them (the calls ``_Batch.work`` makes)."""

    def __init__(self, link: _Link):
        self.link = link
        self.tokens: dict[int, int] = {}  # id of an arrival taken and not recorded -> the batch's token for it

    def get(self, lane: int, wait: bool = True, ready=None, may_pass=None):
        """The next sample the host gives this lane, in its line's order: ``ready`` and ``may_pass``
        (predicates of this process's) are not sent, so a lane process does not take a later sample first."""
        got = self.link.call("get", wait)
        if got is None:
            return None
        token, arrival = got
        self.tokens[id(arrival)] = token
        return arrival

    def abort(self, error: BaseException) -> None:
        self.link.call("lanes", "abort", (f"{type(error).__name__}: {error}",))

    def __getattr__(self, name: str):
        if name not in _LANE_CALLS:
            raise AttributeError(name)
        return lambda *args: self.link.call("lanes", name, args)


class _RemoteBuild:
    def __init__(self, link: _Link, sha: str):
        self.link, self.sha = link, sha

    def done(self) -> bool:
        return self.link.call("build_done", self.sha)

    def result(self):
        return self.link.call("build_result", self.sha)


class _RemoteBuilds:
    def __init__(self, link: _Link):
        self.link = link

    def get(self, sha: str) -> _RemoteBuild:
        return _RemoteBuild(self.link, sha)  # done at once, with no result, where the batch started no build


def _judge_batch(link: _Link, config: dict) -> None:
    """One batch's lane, judged here: the lane loop of ``_Batch.work`` on this process's device,
    with the batch's lanes, builds and records asked of the batch's process."""
    from .local_batch import _Batch

    class _LaneBatch(_Batch):
        def record_arrival(self, a, v) -> None:
            self.link.call("record", self.lanes.tokens.pop(id(a)), v)

    device = config["device"]
    batch = _LaneBatch(None, config["run_id"], config["model"], config["strategy"], config["opts"], [device], 0, False,
                       config["overlap"], lane_processes=False)
    batch.link, batch.lane_count = link, config["lanes"]
    batch.lanes, batch.builds = _RemoteLanes(link), _RemoteBuilds(link)
    batch.cpus = {device: tuple(config["cpus"])} if config["cpus"] else {}
    batch.work(config["lane"], device)
    if batch.failed is not None:
        link.tell("failed", "".join(traceback.format_exception(batch.failed))[-6000:])
    else:
        link.tell("done")


class _ForwardMarks(logging.Handler):
    """Timeline events, sent to the batch's process under the GPU's name there."""

    def __init__(self, link: _Link, named: str):
        super().__init__(logging.DEBUG)
        self.link, self.named = link, named

    def emit(self, record: logging.LogRecord) -> None:
        fields = {"created": record.created, "msg": record.getMessage(), "event": getattr(record, "event", None),
                  "device": self.named, "key": getattr(record, "key", None), "seconds": getattr(record, "seconds", None),
                  "parts": getattr(record, "parts", None)}
        try:
            self.link.tell("mark", fields)
        except OSError:
            pass


def main(argv: list[str]) -> None:
    """A lane process: started with torch not yet imported, it starts its fork server's zygote
    first, then judges one batch's lane after another until its socket closes."""
    faulthandler.enable()  # a fault prints every thread's stack (to the batch's stderr)
    conn = Connection(int(argv[0]))
    hello = conn.recv()
    from ..isolation.process_setup import die_with_parent

    die_with_parent(hello["parent"])
    server_pool.pin_thread(hello["cpus"])
    server_pool.prestart(hello["cuda"])  # the zygote's warm-up is the longest wait: it goes first
    link = _Link(conn)
    log = logging.getLogger(_TIMELINE)
    log.addHandler(_ForwardMarks(link, hello["named"]))
    try:
        while True:
            try:
                kind, config = conn.recv()
            except (EOFError, OSError):
                return
            if kind == "warm":
                _warm(hello["cuda"])
                link.tell("warmed")
                continue
            log.setLevel(logging.DEBUG if config["timeline"] else logging.NOTSET)
            _judge_batch(link, config)
    finally:
        server_pool.close_all()


def _warm(cuda: bool) -> None:
    """What a lane process loads before its first judgement: its fork server and, on a GPU, the CUDA
    context, cuBLAS and a profiler session (on the profiler thread, where the judge's sessions run)."""
    server_pool.server(cuda)
    if not cuda:
        return
    import torch

    from ..measure.profiling import on_session_thread

    torch.cuda.set_device(0)
    x = torch.randn(256, 256, device="cuda")

    def session() -> None:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]):
            float((x @ x).sum())

    on_session_thread(session)


if __name__ == "__main__":
    main(sys.argv[1:])
