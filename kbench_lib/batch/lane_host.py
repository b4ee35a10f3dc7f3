"""One GPU's judging lane in a process of its own (a batch over several GPUs, issue 13).

A batch over several GPUs used to judge them from threads of one process: that process then held
a CUDA context on every GPU and ran its profiler sessions (the reference's profile, the eager
baseline's device clock) on all of them, and could die of a segmentation fault in a thread
without Python while a profiler session stopped, even with every session on one thread of the
process; a process with one GPU's context and sessions does not. Here each GPU's
lane is a process that sees only its GPU (``CUDA_VISIBLE_DEVICES``; it judges on ``cuda:0`` and
its verdicts are recorded under the batch's name for the GPU), as a one-GPU batch is: its CUDA
context, profiler sessions, prepared references, fork server and Python interpreter are its own.

What stays with the batch's process (:class:`kbench_lib.batch.local_batch._Batch`): the model's samples and
their lanes (:class:`kbench_lib.batch.lanes.JudgeLanes`), the builds, the records and the progress bar.
The lane's process runs the same lane loop as a thread would (``_Batch.work``) and asks for all
of that over one socket, a request and its answer at a time (pickled,
:class:`multiprocessing.connection.Connection`): its next sample, the lanes' other questions of
its lane, whether a build is done and its result, a verdict to record. Its timeline events come
back to the batch's ``kbench.timeline`` logger, under the GPU's name.

A lane process outlives its batch: it waits, with its CUDA context and fork server, for the next
batch of this process over its GPU (a notebook judging several models, a benchmark's passes), as
the fork servers of lane threads do (:mod:`kbench_lib.isolation.server_pool`); :func:`start` starts them
ahead and :func:`close_all` stops them. Its first act, before it imports torch, is to start its
fork server's zygote: that warm-up (8-10 s) is what its first worker waits
for, and its own imports and CUDA context come up beside it.

A lane process that dies (a signal, a lost socket) is replaced by a fresh one, which first judges
again the samples the dead one had taken and not recorded; a sample two processes died judging
is recorded as a ``judge_error``. Its job folders are removed (:func:`kbench_lib.judging.build_job._job_parent`);
its fork server and workers die with it. A lane process dies with the batch's process.

This module is the batch's side (:class:`LaneHost`, the pool of lane processes); the lane's own
process is :mod:`kbench_lib.batch.lane_process` (``python -m kbench_lib.batch.lane_process``).
"""
from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING

from ..isolation import server_pool

if TYPE_CHECKING:
    from .local_batch import _Batch  # noqa: F401 - annotations only (never imported at run time)

DEATHS_IN_A_ROW = 3  # lane processes that died without recording a verdict in between: the lane gives up (the batch stops)
_LANE_CALLS = frozenset({"upcoming", "wait_for_more", "ended_here", "forget", "done", "abort"})
_TIMELINE = "kbench.timeline"


class LaneProcessError(RuntimeError):
    """A lane's process failed, or kept dying: its lane cannot go on."""


def process_device(device: str) -> str:
    """The device as a lane's process names it: ``cuda:0``, its only visible GPU."""
    return "cuda:0" if device.startswith("cuda") else device


def process_env(device: str) -> dict[str, str]:
    """The lane process's environment: this one's, with the package importable and, for a GPU,
    that GPU its only visible one."""
    from ..judging.build import physical_gpu
    from ..core.paths import with_package_importable

    env = with_package_importable(dict(os.environ))
    if device.startswith("cuda"):
        _, _, index = device.partition(":")
        env["CUDA_VISIBLE_DEVICES"] = physical_gpu(int(index or 0))
    return env


class _LaneProc:
    """One lane process, as the batch's process holds it: started by the process's long-lived
    spawner thread (it dies with the batch's process, not with a batch's thread)."""

    def __init__(self, device: str, cpus):
        self.device, self.env = device, process_env(device)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.proc = server_pool.spawn([sys.executable, "-m", "kbench_lib.batch.lane_process", str(theirs.fileno())],
                                          pass_fds=[theirs.fileno()], env=self.env)
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.conn.send({"parent": os.getpid(), "cuda": device.startswith("cuda"), "cpus": cpus, "named": device})

    def alive(self) -> bool:
        return self.proc.poll() is None

    def usable(self) -> bool:
        """Alive, and started with this process's environment as it is now (a test may have
        changed the build cache since)."""
        return self.alive() and self.env == process_env(self.device)

    def reap(self, timeout: float = 30.0) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def close(self) -> None:
        """Ends it: it exits when its socket closes (its fork server and zygote with it)."""
        self.conn.close()
        self.reap(10.0)


_IDLE: list[_LaneProc] = []  # lane processes between batches
_POOL_LOCK = threading.Lock()


def _take(device: str, cpus) -> _LaneProc:
    """An idle, usable lane process for ``device``, or a new one; idle ones of ``device`` that are
    not usable end."""
    found, stale = None, []
    with _POOL_LOCK:
        for lp in list(_IDLE):
            if lp.device != device:
                continue
            if not lp.usable():
                _IDLE.remove(lp)
                stale.append(lp)
            elif found is None:
                _IDLE.remove(lp)
                found = lp
    for lp in stale:
        lp.close()
    return found if found is not None else _LaneProc(device, cpus)


def start(devices: list[str], wait: bool = True) -> None:
    """Starts a lane process for each of ``devices`` that has none waiting (a notebook's setup, or
    :func:`kbench_lib.batch.runner.start_servers`), so that a batch over them finds its lanes' processes
    ready. ``wait``: until each has its fork server, its CUDA context, cuBLAS and the profiler
    loaded (as a lane process that has judged a batch has); otherwise they are left starting."""
    from ..core.cpu_sets import gpu_cpu_sets

    cpus = gpu_cpu_sets(devices)
    with _POOL_LOCK:
        waiting = {lp.device for lp in _IDLE if lp.usable()}
    started = [_LaneProc(d, cpus.get(d)) for d in devices if d not in waiting]
    try:
        if wait:
            for lp in started:
                lp.conn.send(("warm", None))
            for lp in started:
                if lp.conn.recv() != ("warmed",):
                    raise LaneProcessError(f"the judging process of {lp.device} did not warm up")
    except BaseException:
        for lp in started:
            lp.close()
        raise
    with _POOL_LOCK:
        _IDLE.extend(started)


def close_all() -> None:
    """Ends every lane process waiting for a batch."""
    with _POOL_LOCK:
        procs = list(_IDLE)
        _IDLE.clear()
    for lp in procs:
        lp.close()


class LaneHost:
    """The batch's side of one lane's process: gives it the batch, answers it, replaces it if it dies."""

    def __init__(self, batch: "_Batch", lane: int, device: str):
        self.batch, self.lane, self.device = batch, lane, device
        self.taken: dict[int, list] = {}  # token -> [arrival, deaths]: given to a lane process and not recorded
        self.redo: deque[int] = deque()  # tokens to give the next process first (its predecessor died judging them)
        self.undone = 0  # recorded, and the process has not yet said it is done with them
        self.tokens = 0

    def config(self) -> dict:
        b = self.batch
        return {"lane": self.lane, "device": process_device(self.device), "lanes": b.lane_count, "cpus": b.cpus.get(self.device),
                "opts": b.opts, "run_id": b.run_id, "model": b.model, "strategy": b.strategy, "overlap": b.overlap,
                "timeline": logging.getLogger(_TIMELINE).isEnabledFor(logging.DEBUG)}

    def run(self) -> None:
        deaths = 0
        while True:
            lp = _take(self.device, self.batch.cpus.get(self.device))
            recorded_before = self.tokens - len(self.taken)
            try:
                ended = self._judge_on(lp)
            except BaseException:
                lp.close()
                raise
            if ended:
                with _POOL_LOCK:
                    _IDLE.append(lp)  # it waits for the next batch
                return
            lp.conn.close()
            code = lp.reap()
            deaths = 0 if self.tokens - len(self.taken) > recorded_before else deaths + 1
            self._after_death(code)
            if deaths >= DEATHS_IN_A_ROW:
                raise LaneProcessError(f"the judging process of {self.device} died {deaths} times in a row (last exit status {code})")

    def _judge_on(self, lp: _LaneProc) -> bool:
        """This batch's lane judged by ``lp``: True once it is done, False if it died."""
        try:
            lp.conn.send(("batch", self.config()))
        except OSError:  # it died while it waited for a batch
            return False
        return self._serve(lp.conn)

    def _serve(self, conn: Connection) -> bool:
        """Answers the process until it is done (True) or gone (False); raises what it failed with."""
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                return False
            kind, args = msg[0], msg[1:]
            if kind == "mark":
                _emit_mark(*args)
                continue
            if kind == "done":
                return True
            if kind == "failed":
                raise LaneProcessError(f"the judging process of {self.device} failed:\n{args[0]}")
            try:
                answer = ("ok", self._answer(kind, *args))
            except BaseException as e:  # noqa: BLE001 - raised again in the lane's process
                answer = ("error", _picklable(e))
            try:
                conn.send(answer)
            except OSError:
                return False

    def _answer(self, kind: str, *args):
        b = self.batch
        if kind == "get":
            return self._give(*args)
        if kind == "lanes":
            name, call_args = args
            if name not in _LANE_CALLS:
                raise ValueError(f"not a lanes call: {name}")
            if name == "done":
                self.undone -= 1
            if name == "abort":
                call_args = (LaneProcessError(f"the judging process of {self.device} stopped the batch: {call_args[0]}"),)
            elif name in ("upcoming", "ended_here", "forget", "done"):
                call_args = (self.lane, *call_args[1:])  # a process speaks for its own lane only
            return getattr(b.lanes, name)(*call_args)
        if kind == "build_done":
            future = b.builds.get(args[0])
            return future is None or future.done()
        if kind == "build_result":
            future = b.builds.get(args[0])
            try:
                return future.result() if future is not None else None
            except Exception:  # noqa: BLE001 - the judge builds it again and records what went wrong
                return None
        if kind == "record":
            token, verdict = args
            a = self.taken.pop(token)[0]
            verdict.device = self.device
            b.record_arrival(a, verdict)
            self.undone += 1
            return None
        raise ValueError(f"not a request: {kind}")

    def _give(self, wait: bool):
        if self.redo:
            token = self.redo.popleft()
            return token, self.taken[token][0]
        while True:
            a = self.batch.lanes.get(self.lane, wait)
            if a is None:
                return None
            why = _unpicklable(a)
            if why is None:
                break
            self._record_error(a, f"the sample could not be sent to the judging process of {self.device}: {why}")
        token, self.tokens = self.tokens, self.tokens + 1
        self.taken[token] = [a, 0]
        return token, a

    def _after_death(self, code: int | None) -> None:
        """What a dead process held: samples judged again by the next one (a second death: a
        judge_error), its recorded samples' load given back, its job folders removed."""
        from ..judging.pipeline import _job_parent

        b = self.batch
        for _ in range(max(0, self.undone)):
            b.lanes.done(self.lane)
        self.undone = 0
        self.redo.clear()
        why = f"exit status {code}" if code is None or code >= 0 else f"signal {-code}"
        for token, held in sorted(self.taken.items()):
            held[1] += 1
            if held[1] < 2:
                self.redo.append(token)
                continue
            del self.taken[token]
            self._record_error(held[0], f"the judge's process for {self.device} died twice while judging this sample ({why})")
        logging.getLogger("kbench").warning("the judging process of %s died (%s); a new one takes its %d samples", self.device, why,
                                            len(self.redo))
        _job_parent()  # job folders of dead judges are removed

    def _record_error(self, a, message: str) -> None:
        """Records ``a`` as a ``judge_error`` (it was taken from the lanes and is done with)."""
        from .verdicts import _error_verdict, _judge_error

        b = self.batch
        if a.sample is not None and a.sample.candidate is not None:
            v = _judge_error(a.problem, a.sample.candidate, self.device, b.opts, message)
        else:
            v = _error_verdict(a.problem, "unknown", self.device, b.opts, "judge_error", message)
        b.record_arrival(a, v)
        b.lanes.done(self.lane)


def lane_pids() -> list[int]:
    """This process's children that are lane processes (for reports: their memory, their ends)."""
    pids = []
    for children in Path("/proc/self/task").glob("*/children"):
        try:
            kids = children.read_text().split()
        except OSError:
            continue
        pids.extend(int(k) for k in kids if _is_lane_process(k))
    return pids


def proc_state(pid: str) -> str:
    """Process ``pid``'s state letter in ``/proc/<pid>/stat`` (``Z``: exited, not yet reaped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _is_lane_process(pid: str, tries: int = 500) -> bool:
    """Whether child ``pid`` runs this module. A child just past exec shows an empty command line for
    a moment (the kernel lets the parent go on before it sets the new program's arguments; on a busy
    2-core machine 2 children in 300 were read in that moment), so an empty one is read again until
    it is set or the child has exited (a zombie's is empty for good)."""
    proc = Path("/proc") / pid
    try:
        for _ in range(tries):
            cmdline = proc.joinpath("cmdline").read_bytes()
            if cmdline or proc_state(pid) in ("Z", "X"):
                return b"kbench_lib.batch.lane_process" in cmdline
            time.sleep(0.001)
    except OSError:  # it has gone
        pass
    return False


def _unpicklable(obj) -> str | None:
    """Why ``obj`` cannot be sent to a lane process (None: it can)."""
    import pickle

    try:
        pickle.dumps(obj)
        return None
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"[:500]


def _picklable(e: BaseException) -> BaseException:
    import pickle

    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:  # noqa: BLE001
        return RuntimeError(f"{type(e).__name__}: {e}")


def _emit_mark(fields: dict) -> None:
    log = logging.getLogger(_TIMELINE)
    log.handle(logging.makeLogRecord({"name": _TIMELINE, "levelno": logging.DEBUG, "levelname": "DEBUG", "args": (), **fields}))
