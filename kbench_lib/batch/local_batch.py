"""One local batch's judging (:class:`_Batch`): samples arrive, their builds start at once, and one
judging lane per device judges them as they come, in a thread of this process or in a process of
its own per GPU (:mod:`kbench_lib.batch.lane_process`). :func:`kbench_lib.batch.runner.run_batch`
starts one; a lane process and a Ray judging actor (:mod:`kbench_lib.cluster.lane`) run its lane
loop (:meth:`_Batch.work`) for one device. Apart from the runner so that those import the lane loop
without the runner, which hands a batch on Ray to :mod:`kbench_lib.cluster`.
"""
from __future__ import annotations

import os
import threading
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures
from dataclasses import replace

import torch
from tqdm.auto import tqdm

from ..core import cpu_sets
from ..core.thread_stop import raise_in
from ..isolation import sandbox, server_pool
from ..judging import build
from .held_references import PreparedReferences, mark
from ..judging.pipeline import JudgeOptions, Verdict, build_candidate, start_judgement
from .lanes import JudgeLanes, LanesAborted
from .overlap import OverlappingLane, Step
from ..suite.problems import Problem
from ..scoring.records import RecordWriter, row_from_verdict
from .verdicts import _judge_error, _judge_one, judged_columns

AHEAD_POLL_S = 0.05  # while a lane's fork server starts and its line holds nothing to prepare: how often it looks again
PENDING_PER_DEVICE = 32  # samples taken from the model and not yet judged, per judging device (then the model waits)


def lane_processes_by_default(devices: list[str]) -> bool:
    """Whether a batch over ``devices`` judges each in a process of its own (:mod:`kbench_lib.batch.lane_process`):
    on several GPUs, unless ``KBENCH_LANE_PROCESSES=0``. (``=1`` asks for it on one device too.)"""
    env = os.environ.get("KBENCH_LANE_PROCESSES")
    if env in ("0", "1"):
        return env == "1"
    return len(devices) > 1 and all(d.startswith("cuda") for d in devices)



class _Stopped(BaseException):
    """Raised in a judging thread of an interrupted batch (:meth:`_Batch.interrupt`), wherever it is; a
    BaseException, so that no ``except Exception`` of the judge takes it for a candidate's failure."""


class _Batch:
    """One local batch: samples arrive (lazily, as the model produces them), their builds start at
    once, and one judging thread per device judges them as they come (:class:`.lanes.JudgeLanes`),
    itself or, with ``lane_processes``, through a process of its own that sees only that device
    (:mod:`kbench_lib.batch.lane_process`); each verdict is appended to the records as soon as it exists."""

    def __init__(self, writer: RecordWriter, run_id: str, model: str, strategy: str, opts: JudgeOptions, devices: list[str],
                 prebuild_jobs: int | None, progress: bool, overlap: bool = False, lane_processes: bool | None = None):
        self.writer, self.run_id, self.model, self.strategy = writer, run_id, model, strategy
        self.opts, self.devices = opts, devices
        self.lane_count = len(devices)  # lanes of the whole batch (a lane's process sees its own device only)
        self.lane_processes = lane_processes_by_default(devices) if lane_processes is None else lane_processes
        prebuild_jobs = build.default_jobs(devices) if prebuild_jobs is None else prebuild_jobs
        self.pool = ThreadPoolExecutor(max_workers=prebuild_jobs, thread_name_prefix="kbench-build") if prebuild_jobs > 1 else None
        self.builds: dict = {}
        self.lanes = JudgeLanes(len(devices), PENDING_PER_DEVICE * len(devices))
        self.cpus = cpu_sets.gpu_cpu_sets(devices)  # several GPUs: each one's workers on cores of their own
        self.serving: set[int] = set()  # lanes whose fork server has started (none prepares ahead any more)
        self.not_ahead: set[tuple[int, str]] = set()  # (lane, problem): its measurement ahead failed (it is made when needed)
        self.rows: list[dict] = []
        self.overlap = overlap
        self.lock = threading.Lock()
        self.failed: BaseException | None = None
        self.interrupted: BaseException | None = None  # Ctrl-C: what was under way is ended and not recorded
        self.stoppable: set[int] = set()  # judging threads (idents) an interrupt stops where they are (_Stopped)
        self.stop_lock = threading.Lock()
        self.bar = tqdm(total=0, desc=f"judging ({model})", unit="cand", disable=not progress)

    def run(self, arrivals, seen: set) -> list[dict]:
        work = self.work_in_process if self.lane_processes else self.work
        ended = [threading.Event() for _ in self.devices]

        def lane(i: int, d: str) -> None:
            try:
                work(i, d)
            finally:
                ended[i].set()

        threads = [threading.Thread(target=lane, args=(i, d), name=f"kbench-judge-{d}", daemon=True) for i, d in enumerate(self.devices)]
        for t in threads:
            t.start()
        try:
            for a in arrivals:
                if (self.model, a.problem.key, a.index) in seen:
                    continue
                self.start_build(a)
                with self.lock:
                    self.bar.total += 1
                    self.bar.refresh()
                self.lanes.put(a)
        except LanesAborted:
            pass  # a judging thread failed: its error is raised below
        except KeyboardInterrupt as e:
            self.interrupt(e)
        finally:
            self.lanes.close()  # the samples already here are still judged, even when the model stopped the batch
            # each lane's end is waited for on an event, not by join: Ctrl-C landing in Thread.join can
            # mark a thread still running as ended (threading's handler for bpo-45274, before Python
            # 3.13), and the batch would return with it judging
            for t, end in zip(threads, ended):
                while not end.is_set():
                    try:
                        end.wait()
                    except KeyboardInterrupt as e:  # Ctrl-C while the last samples are judged
                        self.interrupt(e)
            self.bar.close()
            if self.pool is not None:  # every build the judges waited for is done; an interrupted batch leaves the rest
                self.pool.shutdown(wait=self.lanes.aborted is None, cancel_futures=True)
        if self.interrupted is not None:
            raise self.interrupted
        if self.failed is not None:
            raise self.failed
        return self.rows

    def interrupt(self, e: KeyboardInterrupt) -> None:
        """Ctrl-C: no sample is begun any more, and the builds and workers under way are ended at
        once (:func:`kbench_lib.isolation.sandbox.stop_owned`); their verdicts, and any not yet
        recorded, are not recorded (a killed worker's would read as a crash), so the same run id
        judges them again. The verdicts recorded before stay. A judging thread in the judge's own
        work (preparing a reference, timing its baseline, re-checking outputs: seconds, minutes for
        a large model on the CPU) is stopped where it is (:class:`_Stopped`), so the command ends at
        once instead of after that work."""
        first = self.interrupted is None
        self.interrupted = e
        self.lanes.abort(e)
        sandbox.stop_owned(self)
        if first:  # a judging thread in the judge's own work (a reference prepared, a baseline timed) stops there
            with self.stop_lock:
                for ident in self.stoppable:
                    raise_in(ident, _Stopped)
                self.stoppable.clear()

    def start_build(self, a) -> None:
        """Builds overlap with judging: the judge waits only for the candidate it judges next."""
        c = a.sample.candidate if a.sample is not None else None
        if self.pool is None or c is None or c.sha in self.builds:
            return
        device = self.devices[0]
        if build.needs_build(c) and not build.is_built(c, device) and not build.build_failure(c, device):
            self.builds[c.sha] = self.pool.submit(self._build, c, device, a.problem.path)

    def _build(self, c, device: str, problem_path):
        with sandbox.owned_by(self):
            return build_candidate(c, device, self.opts, None, problem_path)

    def work(self, lane: int, device: str) -> None:
        with sandbox.owned_by(self):
            self._work(lane, device)

    def _work(self, lane: int, device: str) -> None:
        if device.startswith("cuda:"):
            torch.cuda.set_device(torch.device(device))
        server_pool.pin_thread(self.cpus.get(device))
        server_pool.prestart(device.startswith("cuda"))  # its workers' fork server starts while references are made
        prepared = PreparedReferences(device, self.opts, lanes=self.lane_count)
        busy: Counter = Counter()  # problems with a sample taken and not yet recorded

        def let_go() -> None:
            """References of problems this lane has judged its last sample of (possibly one of
            several lanes a problem was spread over)."""
            for key in self.lanes.ended_here(lane):
                if busy[key] <= 0:
                    prepared.release(key)
                    self.lanes.forget(lane, key)

        def may_pass(a) -> bool:
            """Whether ``a`` may go before a sample still building: its own build done, and its
            reference held or room to prepare it without letting another problem's go."""
            return self.ready(a) and (a.sample is None or a.sample.candidate is None or prepared.holds(a.problem.key)
                                      or prepared.has_room())

        def take(wait: bool):
            let_go()
            a = self.lanes.get(lane, wait, ready=self.ready, may_pass=may_pass)
            if a is not None:  # busy from here: a sample taken, even if begun later, keeps its reference
                busy[a.problem.key] += 1
                let_go()  # what ended on other lanes while this one waited goes before its next reference comes
            return a

        alone: set[int] = set()  # samples set aside, to be judged again with nothing beside them

        def begin(a, gated: bool) -> Step:
            again = id(a) in alone
            alone.discard(id(a))
            return self.begin(a, device, prepared, gated, busy, lane, again)

        def record(step: Step, v: Verdict) -> None:
            a = step.arrival
            try:
                if self.interrupted is None:
                    self.record_arrival(a, v)
            finally:
                busy[a.problem.key] -= 1
                self.lanes.done(lane)
            let_go()

        run = OverlappingLane(take, self.ready, begin, lambda step, beside: self.finish(step, device, beside), record,
                              set_aside=lambda step: alone.add(id(step.arrival)),
                              overlap=self.overlap)  # a step set aside stays busy: it is begun again
        try:
            ident = self._stoppable()
            try:
                run.run()
            finally:
                self._not_stoppable(ident)
        except _Stopped:
            pass  # the batch was interrupted (interrupt)
        except BaseException as e:  # noqa: BLE001 - recording failed: stop the batch, raise it in the caller
            self.failed = e
            self.lanes.abort(e)
        finally:
            prepared.release_all()

    def _stoppable(self) -> int:
        """This judging thread's ident; an interrupt stops it where it is from now on (one that came
        before: :class:`_Stopped` at once)."""
        with self.stop_lock:
            if self.interrupted is not None:
                raise _Stopped
            ident = threading.get_ident()
            self.stoppable.add(ident)
            return ident

    def _not_stoppable(self, ident: int) -> None:
        """No interrupt reaches this thread from here on; one raised and not yet seen is taken back."""
        with self.stop_lock:
            if ident in self.stoppable:
                self.stoppable.discard(ident)
            else:
                raise_in(ident, None)

    def work_in_process(self, lane: int, device: str) -> None:
        """``lane`` judged by a process of its own (:mod:`kbench_lib.batch.lane_process`); this thread
        serves it the lane's samples, their builds and the records."""
        from .lane_host import LaneHost

        try:
            LaneHost(self, lane, device).run()
        except BaseException as e:  # noqa: BLE001 - the lane cannot go on: stop the batch, raise it in the caller
            self.failed = e
            self.lanes.abort(e)

    def record_arrival(self, a, v: Verdict) -> None:
        self.record(a.problem, a.sample, v)

    def ready(self, a) -> bool:
        """Whether ``a`` can start without waiting for its build."""
        c = a.sample.candidate if a.sample is not None else None
        future = self.builds.get(c.sha) if c is not None else None
        return future is None or future.done()

    def prepare_ahead(self, lane: int, device: str, prepared: PreparedReferences, first: Problem | None = None) -> None:
        """While this lane's fork server is still starting (its first worker would only wait for
        it: 9-14 s), the references of the
        problems waiting in its line are prepared, in their order, as far as
        :meth:`PreparedReferences.has_room` allows; then the judge's own measurements of the held
        ones are made (:meth:`measure_ahead`); then samples still to come are waited for. A
        preparation or measurement still under way when the server is ready is given up at its
        next case or measurement, so the first worker does not wait for it (a preparation left to
        finish can hold a GPU's first judgement back by seconds after its server is ready)."""
        if lane in self.serving:
            return
        cuda = device.startswith("cuda")
        while True:
            if server_pool.started(cuda):
                self.serving.add(lane)  # from now on a worker never waits for it: nothing to do ahead
                mark("server_seen", device)
                return
            ahead = self._next_unprepared(lane, prepared)
            if ahead is not None:  # given up at a case's boundary once the server is ready (checked again above)
                prepared.get(ahead, busy=prepared.keys(), cancel=lambda: server_pool.started(cuda))
            elif cuda and self.measure_ahead(lane, device, prepared, first):
                continue  # (not on the CPU: there the measurements would share the cores the server starts on)
            elif not prepared.has_room():
                mark("no_room", device)
                return
            elif not self.lanes.wait_for_more(AHEAD_POLL_S):
                mark("nothing_ahead", device)
                return  # no more samples come to this lane

    def measure_ahead(self, lane: int, device: str, prepared: PreparedReferences, first: Problem | None = None) -> bool:
        """Measures one held reference that is not yet measured (its eager baseline, its profile:
        :meth:`PreparedProblem.measure_now`), ``first`` (the problem about to be judged) before
        those waiting in ``lane``'s line; False when none is left. Called only while the lane's
        fork server starts: no worker of this lane has run yet, so nothing shares its GPU with
        these measurements. Judging one candidate at a time, a reference is otherwise measured
        when its first candidate passes its checks. A lane's first eager baseline is its slowest
        (seconds, where later ones take 0.5-2 s); measured here, it overlaps the wait for the
        server instead of following it."""
        cuda = device.startswith("cuda")
        keys = dict.fromkeys([*([first.key] if first is not None else []), *(p.key for p in self.lanes.upcoming(lane))])
        opts = replace(self.opts, device=device)
        for key in keys:
            ref = prepared.held(key)
            if not hasattr(ref, "measure_now") or (lane, key) in self.not_ahead or ref.measured(opts):
                continue  # a failure's reason, one whose measurement failed here, or measured already
            t0 = time.monotonic()
            try:
                took = ref.measure_now(opts, cancel=lambda: server_pool.started(cuda))
            except Exception as e:  # noqa: BLE001 - measured again when a candidate needs it, and fails in its verdict then
                self.not_ahead.add((lane, key))
                mark("measure_failed", device, key, round(time.monotonic() - t0, 3), parts={"error": f"{type(e).__name__}: {e}"[:300]})
                return True
            if took:  # (nothing when the server was ready before its first measurement)
                mark("measured", device, key, round(time.monotonic() - t0, 3), parts=took)
            return True
        return False

    def _next_unprepared(self, lane: int, prepared: PreparedReferences) -> Problem | None:
        """The first problem waiting in ``lane``'s line whose reference it does not hold, if one
        more may be held (None otherwise)."""
        if not prepared.has_room():
            return None
        return next((p for p in self.lanes.upcoming(lane) if not prepared.holds(p.key)), None)

    def prepares_beside(self) -> bool:
        """Whether a lane prepares the next problem while a worker starts: unless candidates
        overlap (they have their own order). Without it each new problem's reference is prepared
        between two candidates (13-18 s per GPU over a two-GPU batch). Another lane's profiler
        sessions beside a preparation (CUPTI is the process's where lanes are threads of one
        process) do not make it fault: hundreds of sessions beside preparations, on the same GPU
        and on another, run without one. The CLI and the benchmarks print every thread's stack if
        the judge faults."""
        return not self.overlap

    def prepare_beside(self, lane: int, prepared: PreparedReferences) -> bool:
        """The next unprepared problem of ``lane``'s line prepared while a worker starts and runs
        its correctness calls behind its gate (nothing measures those; the gate opens after this,
        so its profile and timed calls never share the GPU with it). One made while the worker
        held device memory is not kept if it failed: it is prepared again alone. Whether one was
        prepared (the worker's verdict, if ``oom``, is then given again alone)."""
        ahead = self._next_unprepared(lane, prepared)
        if ahead is None:
            return False
        if isinstance(prepared.get(ahead, busy=prepared.keys()), str):
            prepared.release(ahead.key)
        return True

    def begin(self, a, device: str, prepared: PreparedReferences, gated: bool, busy, lane: int = 0, alone: bool = False) -> Step:
        """Starts judging ``a``: its build waited for, its problem's reference prepared (and, when
        candidates overlap, measured now, while no worker runs), its worker started. References
        of the problems after it in ``lane``'s line are prepared while the lane's fork server
        starts and one at a time while its worker starts behind its gate
        (:meth:`prepares_beside`; never for a sample judged again ``alone``). Once the batch is
        interrupted, :class:`LanesAborted` instead: nothing is begun, no build waited for."""
        sample, problem = a.sample, a.problem
        c = sample.candidate if sample is not None else None
        future = self.builds.get(c.sha) if c is not None else None
        built = None
        if future is not None:
            t0 = time.monotonic()
            # a build of this process is given up on an interrupt (a lane process's are its batch's to end)
            while isinstance(future, Future) and not wait_for_futures([future], timeout=0.5).done:
                if self.interrupted is not None:
                    raise LanesAborted("the batch was interrupted")
            waited = time.monotonic() - t0
            if waited >= 0.5:
                mark("build_waited", device, problem.key, round(waited, 3))
            try:
                built = future.result()  # a failure is the verdict: never built twice in one batch
            except Exception:  # noqa: BLE001 - the judge builds it again and records what went wrong
                pass
        if self.interrupted is not None:
            raise LanesAborted("the batch was interrupted")
        err = f"model {self.model} failed to produce a candidate: {a.error}" if a.error is not None else None
        if c is None:
            return Step(a, verdict=_judge_one(problem, sample, err, None, device, self.opts))
        ref = prepared.get(problem, busy=[k for k, n in busy.items() if n > 0 and k != problem.key])
        if isinstance(ref, str):
            return Step(a, verdict=_judge_one(problem, sample, err, ref, device, self.opts))
        try:
            if self.overlap:
                ref.measure_now(replace(self.opts, device=device))
            self.prepare_ahead(lane, device, prepared, first=problem)
            beside = self.prepares_beside() and not alone and self._next_unprepared(lane, prepared) is not None
            mark("begin", device, problem.key)
            step = Step(a, judgement=start_judgement(problem, c, replace(self.opts, device=device), prepared=ref,
                                                     gated=gated or beside, built=built))
        except Exception as e:  # noqa: BLE001 - never lose the batch to one candidate
            return Step(a, verdict=_judge_error(problem, c, device, self.opts, e))
        try:
            if beside and step.judgement.run is not None:
                step.beside = self.prepare_beside(lane, prepared)
        finally:
            if not gated:
                step.judgement.open_gate()
        return step

    def finish(self, step: Step, device: str, beside: bool) -> Verdict | None:
        """``step``'s verdict; None when the judge's checks ran out of device memory beside
        another candidate's worker (it is judged again alone)."""
        try:
            return step.judgement.finish()
        except Exception as e:  # noqa: BLE001 - never lose the batch to one candidate
            if beside and isinstance(e, torch.cuda.OutOfMemoryError):
                return None
            return _judge_error(step.arrival.problem, step.arrival.sample.candidate, device, self.opts, e)

    def record(self, problem: Problem, sample, v: Verdict) -> None:
        row = row_from_verdict(v, run_id=self.run_id, model=self.model, strategy=self.strategy, sample=sample.index if sample else 0,
                               tags=problem.tags, extra=judged_columns(problem, sample))
        with self.lock:
            self.writer.append(row)
            self.rows.append(row)
            self.bar.set_postfix_str(problem.key[-40:])
            self.bar.update(1)
