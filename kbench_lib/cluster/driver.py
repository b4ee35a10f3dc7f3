"""The driver of a batch on a Ray cluster: it hands out the work, follows it, and alone writes the
records (one row per sample key, appended as each verdict arrives, never twice).

Work in flight is a set of Ray object references, each tagged with what it is: a language
model's answers for one problem (generation actor), a build on one node (CPU task), a judge
becoming ready, a verdict (judging actor). The loop waits for any of them and acts on it:

- answers become jobs in the queue;
- a judge with room gets whole problems from the queue (:class:`.work.WorkQueue`), starts their
  builds on its node and is sent up to ``DEPTH`` jobs whose builds are done, each under a token;
- a judge left with nothing (no share, nothing running, the queue empty) while another has jobs
  waiting in its lane's line asks that one to give back the last of them unstarted
  (:meth:`.actors.JudgeActor.take_back`): so the batch does not end on one GPU judging the
  jobs it was sent ahead while the other idles;
- each judge has one call out at a time that waits for its verdicts (:meth:`.actors.JudgeActor.verdicts`,
  acknowledging those read before): each verdict becomes a record;
- a judge that died (its process, or its node) gives back its share and the jobs it was running,
  which go first in line to the judges left, and a replacement judge is asked for (Ray starts it
  when a GPU is free again: a node that returns, or a new one). The job it was running when it
  died is charged with the death; after ``MAX_DEATHS`` it is recorded as a ``judge_error`` rather
  than killing judge after judge. A candidate that kills its own process is not a death: the
  judge turns that into a ``crash`` verdict.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from ..judging import build
from ..judging.pipeline import JudgeOptions, Verdict
from ..generation.models import ModelUnavailable, get_model, iter_samples
from ..scoring.records import RecordWriter, read_records, row_from_verdict
from . import actors, connect
from .errors import ClusterError
from .work import Job, WorkQueue, jobs_for

DEPTH = 3  # jobs sent to a judge ahead of its verdicts (one running, the next ones waiting in its lane's line, whose
#             references its lane prepares while a worker starts)
STUCK_S = 10.0  # a judge running nothing whose every job has waited this long for its build takes work from another
TAKE_AGAIN_S = 0.5  # after a judge had nothing waiting to give back, how long before it is asked again
POLL_S = 2.0  # how long a judge's call for verdicts waits for one before it returns with none
MAX_DEATHS = 3  # judge deaths a job may be running at before it is recorded as a judge_error
STARTUP_FAILURES = 3  # judges in a row that die before they are ready: the cluster cannot judge


@dataclass
class Judge:
    handle: object
    index: int
    info: dict | None = None  # from JudgeActor.info once ready
    alive: bool = False
    dead: bool = False
    share: deque = field(default_factory=deque)  # jobs given to it, not yet sent
    running: dict = field(default_factory=dict)  # token -> job sent and not yet recorded, in the order sent
    acknowledged: list = field(default_factory=list)  # tokens of verdicts read since its last call for verdicts
    sent_any: bool = False  # whether it has been sent a job yet
    giving_back: bool = False  # a call to take jobs back out of its line is out
    ask_again_at: float = 0.0  # when it may be asked again after it had nothing waiting

    @property
    def node(self) -> str | None:
        return self.info["node_id"] if self.info else None


class Batch:
    """One batch's state on the driver (see the module docstring)."""

    def __init__(self, ray, problems, model: str, *, run_id: str, runs_root, opts: JudgeOptions, strategy: str, backends,
                 progress: bool, gpus, judges: int | None, generation, recover_timeout_s: float, events: list | None):
        self.ray, self.problems, self.model, self.run_id = ray, list(problems), model, run_id
        self.opts, self.strategy, self.backends, self.generation = opts, strategy, backends, generation
        self.recover_timeout_s = recover_timeout_s
        self.events = events if events is not None else []
        self.writer = RecordWriter(runs_root, run_id)
        done = read_records(runs_root, run_id)
        self.done = set(zip(done["model"], done["problem"], done["sample"])) if len(done) else set()
        self.kind = connect.judge_kind(ray, opts)
        self.n_judges = connect.judge_count(ray, self.kind, gpus, judges)
        self.queue = WorkQueue()
        self.refs: dict = {}  # object ref -> (what, data)
        self.tokens = 0  # the last token given to a job sent to a judge
        self.builds: dict = {}  # (node id, kernel sha) -> ref while building, True when done
        self.build_started: dict = {}  # (node id, kernel sha) -> when its build started
        self.build_failed: dict = {}  # (node id, kernel sha) -> the failed BuildResult its build task returned, sent with the job
        self._slots: dict = {}  # (node id, judges there) -> builds at once there
        self.judges: list[Judge] = []
        self.gen_actor = None
        self.gen_pending = 0
        self.rows: list[dict] = []
        self.startup_failures = 0
        self.no_judge_since: float | None = None
        self.bar = tqdm(total=0, desc=f"judging ({model}) on Ray", unit="cand", disable=not progress)

    def event(self, name: str, **data) -> None:
        self.events.append({"t": time.time(), "event": name, **data})

    # -- generation ------------------------------------------------------------------------------

    def add_jobs(self, jobs: list[Job]) -> None:
        if jobs:
            self.queue.add(jobs)
            self.bar.total += len(jobs)
            self.bar.refresh()

    def start_generation(self) -> None:
        """Language models behind an API: one call per problem to a generation actor on the
        driver's node. Offline models (files, torch.compile) and ``hf:`` checkpoints: here."""
        from ..generation.spec import is_language_model, parse_spec

        if is_language_model(self.model) and parse_spec(self.model).provider != "hf":
            self._start_generation_actor(parse_spec(self.model))
            return
        generate = get_model(self.model, self.backends, self.generation)
        skip = {(p, i) for m, p, i in self.done if m == self.model}
        try:
            for problem, samples, err in iter_samples(generate, self.problems, skip=skip):
                self.add_jobs(jobs_for(self.model, problem, samples, err, self.done))
        finally:
            close = getattr(generate, "close", None)  # an hf: checkpoint's model and event loop
            if close is not None:
                close()

    def _start_generation_actor(self, spec) -> None:
        import os

        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from ..generation.cache import DEFAULT_PATH
        from ..generation.language_model import GenerationOptions

        options = GenerationOptions.from_value(self.generation)
        opts_dict = dict(self.generation or {})
        opts_dict["cache_path"] = actors.driver_path(options.cache_path, DEFAULT_PATH)
        env = {spec.key_env: os.environ[spec.key_env]} if spec.key_env and os.environ.get(spec.key_env) else {}
        here = self.ray.get_runtime_context().get_node_id()
        remote = self.ray.remote(actors.GenerationActor).options(
            num_cpus=0, max_concurrency=1000, max_restarts=2, max_task_retries=2, runtime_env={"env_vars": env} if env else None,
            scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=True))
        self.gen_actor = remote.remote(self.model, opts_dict)
        for p in self.problems:
            wanted = [i for i in range(options.samples) if (self.model, p.key, i) not in self.done]
            if wanted:
                self.refs[self.gen_actor.samples.remote(p, wanted)] = ("generated", p)
                self.gen_pending += 1

    def on_generated(self, ref, problem) -> None:
        self.gen_pending -= 1
        try:
            samples, err = self.ray.get(ref), None
        except self.ray.exceptions.RayTaskError as e:
            cause = e.cause if getattr(e, "cause", None) is not None else e
            if isinstance(cause, ModelUnavailable):
                raise cause from None
            samples, err = [], f"{type(cause).__name__}: {cause}"
        except self.ray.exceptions.RayActorError as e:
            raise ClusterError(f"the generation actor for {self.model} died: {e}") from e
        self.add_jobs(jobs_for(self.model, problem, samples, err, self.done))

    # -- judges ------------------------------------------------------------------------------------

    def start_judge(self) -> None:
        remote = self.ray.remote(actors.JudgeActor).options(**connect.judge_options(self.kind))
        judge = Judge(remote.remote(self.opts, self.kind), len(self.judges))
        self.judges.append(judge)
        self.refs[judge.handle.info.remote()] = ("ready", judge)

    def on_ready(self, ref, judge: Judge) -> None:
        try:
            judge.info = self.ray.get(ref)
        except self.ray.exceptions.RayError as e:
            self.startup_failures += 1
            judge.dead = True
            self.event("judge_failed_to_start", judge=judge.index, error=str(e)[-2000:])
            if self.startup_failures < STARTUP_FAILURES:
                self.start_judge()
            elif not self.live() and not self.starting():
                raise ClusterError(f"{self.startup_failures} judging actors in a row died before they were ready; the last: {e}") from e
            return
        judge.alive, self.startup_failures = True, 0
        self.poll(judge)
        self.event("judge_ready", judge=judge.index, node=judge.node, host=judge.info["host"], gpu=judge.info["gpu"],
                   cpus=judge.info.get("cpus"), threads=judge.info.get("threads"), device_name=judge.info["device_name"])
        mine = judge.info["env"].get("git_sha")
        if self.judges[0].info and mine != self.judges[0].info["env"].get("git_sha"):
            self.event("version_mismatch", judge=judge.index, git_sha=mine)

    def live(self) -> list[Judge]:
        return [j for j in self.judges if j.alive]

    def starting(self) -> list[Judge]:
        """Judges asked for and not ready yet (nor dead)."""
        return [j for j in self.judges if not j.alive and not j.dead]

    def on_died(self, judge: Judge, error) -> None:
        """A judge's process or node is gone: its work goes back in line, a replacement is asked for."""
        if not judge.alive:
            return
        judge.alive, judge.dead = False, True
        try:  # one only unreachable for a while would keep its GPU, and its replacement could never start
            self.ray.kill(judge.handle, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
        running = list(judge.running.values())
        for ref in [r for r, (_, data) in self.refs.items() if data is judge]:  # its calls for verdicts and its jobs sent
            del self.refs[ref]
        if running:
            running[0].deaths += 1
        back = [j for j in running + list(judge.share) if j.key not in self.done]
        judge.running.clear()
        judge.share.clear()
        given_up = [j for j in back if j.deaths >= MAX_DEATHS]
        for j in given_up:
            msg = f"the judging process died {j.deaths} times while judging this candidate (last: {str(error)[-500:]})"
            self.record(j, self._driver_verdict(j, judge.info, "judge_error", msg), judge)
        self.queue.put_back([j for j in back if j.deaths < MAX_DEATHS], [j.share for j in self.live()])
        self.event("judge_died", judge=judge.index, node=judge.node, requeued=len(back) - len(given_up),
                   running=[list(j.key) for j in running], error=str(error)[-1000:])
        self.start_judge()

    def _driver_verdict(self, job: Job, info: dict, failure: str, message: str) -> Verdict:
        c = job.candidate
        return Verdict(problem=job.problem.key, level=job.problem.level, backend=c.backend if c is not None else "unknown",
                       device=info["device"], device_name=info["device_name"], precision=self.opts.precision, failure=failure,
                       message=message, env=info["env"], kernel_sha=c.sha[:16] if c is not None else None)

    # -- builds and judging ------------------------------------------------------------------------

    def build_ready(self, judge: Judge, job: Job) -> bool:
        """Whether ``job`` may go to ``judge`` now; starts its build on the judge's node if needed."""
        c = job.candidate
        if c is None or not build.needs_build(c):
            return True
        key = (judge.node, c.sha)
        state = self.builds.get(key)
        if state is None:
            if self.building(judge.node) >= self.build_slots(judge.node):
                return False  # asked again on the next pass of the loop, once a build there is done
            remote = self.ray.remote(actors.build_on_node).options(**connect.build_options(self.kind, judge.node, judge.info["gpu"]))
            ref = remote.remote(c, self.kind, self.opts)
            self.builds[key] = ref
            self.build_started[key] = time.monotonic()
            self.refs[ref] = ("built", key)
            return False
        return state is True

    def stuck(self, judge: Judge) -> bool:
        """Whether ``judge`` runs nothing and each job of its share waits for a build that started
        over ``STUCK_S`` ago (one that hangs until its limit would otherwise keep it idle while
        another judge still holds work)."""
        if judge.running or not judge.share:
            return False
        now = time.monotonic()
        for job in judge.share:
            c = job.candidate
            key = (judge.node, c.sha) if c is not None else None
            if key is None or not build.needs_build(c) or self.builds.get(key) is True:
                return False
            if now - self.build_started.get(key, now) < STUCK_S:
                return False
        return True

    def building(self, node: str) -> int:
        return sum(1 for (n, _), state in self.builds.items() if n == node and state is not True)

    def build_slots(self, node: str) -> int:
        """Builds at once on ``node`` (:func:`.connect.build_slots`; builds reserve no CPU from Ray)."""
        judges = sum(1 for j in self.live() if j.node == node)
        if (node, judges) not in self._slots:
            self._slots[(node, judges)] = connect.build_slots(self.ray, node, judges)
        return self._slots[(node, judges)]

    def on_built(self, ref, key) -> None:
        try:
            result = self.ray.get(ref)
        except self.ray.exceptions.RayError as e:  # the node went, or the task failed: the judge builds it itself
            result = {"built": False, "reason": str(e)[-300:]}
        self.builds[key] = True
        if result.get("result") is not None:
            self.build_failed[key] = result["result"]
        self.event("built", node=key[0], sha=key[1][:16], **{k: v for k, v in result.items() if k not in ("node_id", "result")})

    def feed(self) -> None:
        """Gives every live judge work and sends it what it can start."""
        for judge in self.live():
            others = [j.share for j in self.live() if j is not judge] if not judge.running else []  # only an idle judge takes work
            for job in self.queue.refill(judge.share, others, self.stuck(judge)):
                self.build_ready(judge, job)  # builds start as soon as the work is given
            sent = []
            for job in list(judge.share):
                if len(judge.running) + len(sent) >= DEPTH:
                    break
                # a judge's first jobs go at once: its lane finds them in the node's build cache, or
                # builds them there (a build task of the same source beside it is waited for), while
                # its fork server starts; the first build tasks on a node wait for Ray workers to start
                if self.build_ready(judge, job) or not judge.sent_any:
                    judge.share.remove(job)
                    sent.append(job)
            if sent:
                self.send(judge, sent)

        self.take_back_for_idle()

    def take_back_for_idle(self) -> None:
        """With a live judge left with nothing and nothing else to give it, asks the judge with the
        most jobs sent (two at least: one being judged, one that may wait in its line) to give back
        the last job waiting in its lane's line (:meth:`on_taken`)."""
        if self.queue or self.gen_pending or not any(not j.running and not j.share for j in self.live()):
            return
        if any(j.giving_back for j in self.live()):  # one call out at a time
            return
        now = time.monotonic()
        victims = [j for j in self.live() if len(j.running) >= 2 and now >= j.ask_again_at]
        if not victims:
            return
        victim = max(victims, key=lambda j: len(j.running))
        victim.giving_back = True
        self.refs[victim.handle.take_back.remote()] = ("taken", victim)

    def on_taken(self, ref, judge: Judge) -> None:
        """Tokens ``judge`` took back out of its line unstarted: their jobs go to the live judge with
        the shortest share (the one that ran dry); none: it is asked again after ``TAKE_AGAIN_S``."""
        judge.giving_back = False
        try:
            tokens = self.ray.get(ref)
        except self.ray.exceptions.RayError:  # the judge is gone: its verdict calls say so (on_died)
            return
        jobs = [job for job in (judge.running.pop(t, None) for t in tokens) if job is not None]
        if not jobs:
            judge.ask_again_at = time.monotonic() + TAKE_AGAIN_S
            return
        others = [j.share for j in self.live() if j is not judge]
        self.queue.put_back(jobs, others or [judge.share])
        self.event("taken_back", judge=judge.index, keys=[list(j.key) for j in jobs])

    def send(self, judge: Judge, jobs: list[Job]) -> None:
        """``jobs`` to ``judge``'s lane, in order, each under a new token; a job is its problem's
        ``last`` when no other sample of that problem follows it in the judge's share (the lane may
        let its reference go once judged; more of it later are prepared again). A job whose build
        failed on the judge's node carries that failure: it is the verdict, not built again."""
        judge.sent_any = True
        batch = []
        for i, job in enumerate(jobs):
            self.tokens += 1
            later = {j.problem.key for j in jobs[i + 1:]} | {j.problem.key for j in judge.share}
            failed = self.build_failed.get((judge.node, job.candidate.sha)) if job.candidate is not None else None
            batch.append((self.tokens, job.problem, job.sample, job.err, job.problem.key not in later, failed))
            judge.running[self.tokens] = job
            self.event("dispatched", key=list(job.key), judge=judge.index, node=judge.node)
        self.refs[judge.handle.put.remote(batch)] = ("sent", judge)

    def poll(self, judge: Judge) -> None:
        """``judge``'s call for its verdicts, acknowledging those read since the last."""
        ref = judge.handle.verdicts.remote(judge.acknowledged, POLL_S)
        judge.acknowledged = []
        self.refs[ref] = ("verdicts", judge)

    def on_sent(self, ref, judge: Judge) -> None:
        """Jobs handed to a judge: if they did not arrive, the judge is taken for lost (its work,
        these jobs with it, goes back in line; a job it had judged anyway is not recorded twice)."""
        try:
            self.ray.get(ref)
        except self.ray.exceptions.RayError as e:
            self.on_died(judge, e)

    def on_verdicts(self, ref, judge: Judge) -> None:
        """Verdicts from ``judge``: each recorded (once: one the judge sends again because its
        acknowledgement was lost is dropped), and its next call for verdicts made. A judge whose
        process or node died, or whose lane stopped (its own code failed), is taken for lost: its
        work goes back in line (:meth:`on_died`). A call lost to the system (an object or RPC lost
        with a node) is made again: the judge keeps its verdicts until they are acknowledged."""
        try:
            got = self.ray.get(ref)
        except (self.ray.exceptions.RayActorError, self.ray.exceptions.RayTaskError) as e:
            self.on_died(judge, e)
            return
        except self.ray.exceptions.RayError as e:
            self.event("verdicts_call_lost", judge=judge.index, error=str(e)[-500:])
            got = []
        for token, verdict in got:
            judge.acknowledged.append(token)
            job = judge.running.pop(token, None)
            if job is not None:
                self.record(job, verdict, judge)
        if judge.alive:
            self.poll(judge)

    def record(self, job: Job, verdict: Verdict, judge: Judge) -> None:
        if job.key in self.done:  # never twice
            self.event("duplicate_dropped", key=list(job.key))
            return
        from ..batch.verdicts import judged_columns

        row = row_from_verdict(verdict, run_id=self.run_id, model=self.model, strategy=self.strategy, sample=job.key[2],
                               tags=job.problem.tags, extra=judged_columns(job.problem, job.sample))
        self.writer.append(row)
        self.done.add(job.key)
        self.rows.append(row)
        self.event("recorded", key=list(job.key), judge=judge.index, node=judge.node, failure=row["failure"])
        self.bar.set_postfix_str(job.problem.key[-40:])
        self.bar.update(1)

    # -- the loop ----------------------------------------------------------------------------------

    def finished(self) -> bool:
        return (self.gen_pending == 0 and not len(self.queue) and all(not j.share and not j.running for j in self.judges))

    def check_capacity(self) -> None:
        if self.live():
            self.no_judge_since = None
            return
        now = time.monotonic()
        self.no_judge_since = self.no_judge_since or now
        if now - self.no_judge_since > self.recover_timeout_s:
            raise ClusterError(f"no judging actor has been alive for {self.recover_timeout_s:g} s (the cluster lost its "
                               f"{self.kind} capacity; {len(self.queue)} jobs wait)")

    def dispatch(self, ref) -> None:
        what, data = self.refs.pop(ref)
        getattr(self, f"on_{what}")(ref, data)

    def run(self) -> list[dict]:
        for _ in range(self.n_judges):
            self.start_judge()
        self.start_generation()
        while True:
            self.feed()
            if self.finished():
                return self.rows
            self.check_capacity()
            refs = list(self.refs)
            if not refs:
                raise ClusterError("nothing in flight and work left: the driver lost track of the batch (a bug)")
            ready, _ = self.ray.wait(refs, num_returns=1, timeout=1.0)
            if ready:
                ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
            for ref in ready:
                if ref in self.refs:
                    self.dispatch(ref)

    def close(self) -> None:
        """Stops this batch's actors and pending builds."""
        self.bar.close()
        ray = self.ray
        live = [j.handle.close.remote() for j in self.live()]
        if live:
            try:
                ray.wait(live, num_returns=len(live), timeout=30)
            except Exception:  # noqa: BLE001
                pass
        for j in self.judges:
            ray.kill(j.handle)
        if self.gen_actor is not None:
            ray.kill(self.gen_actor)
        for ref, (what, _) in list(self.refs.items()):
            if what == "built":
                try:
                    ray.cancel(ref)
                except Exception:  # noqa: BLE001
                    pass


def run_batch_on_ray(problems, model: str = "reference", *, address: str | None = None, run_id: str | None = None,
                     runs_root: str | Path | None = None, opts: JudgeOptions | None = None, strategy: str = "single",
                     backends: tuple[str, ...] | None = None, progress: bool = True, prebuild_jobs: int = 0,
                     gpus: int | str | None = None, judges: int | None = None, generation=None, recover_timeout_s: float = 600.0,
                     events: list | None = None) -> tuple[str, list[dict]]:
    """:func:`kbench_lib.batch.runner.run_batch` on a Ray cluster; returns (run_id, the rows written now).

    One judging actor per GPU of the cluster (at most ``gpus``), or on a cluster without GPUs
    ``judges`` CPU judges (default one per node); builds as CPU tasks on the node that judges the
    candidate (each node has its own content-hashed build cache); a language model's requests as
    an asynchronous actor on the driver's node. ``prebuild_jobs`` is accepted for the local
    runner's signature: on Ray every build is a task. A judge lost with its node is replaced when
    the cluster has room again; with none alive for ``recover_timeout_s`` the batch stops with a
    :class:`ClusterError` (records kept, the run id resumes). ``events``, when given, receives what
    happened (judges ready and died, builds, records) with times."""
    from ..batch.verdicts import new_run_id
    from ..core.paths import RUNS_ROOT

    ray, connected_here = connect.connect(address)
    run_id = run_id or new_run_id()
    batch = None
    try:
        batch = Batch(ray, problems, model, run_id=run_id, runs_root=runs_root or RUNS_ROOT, opts=opts or JudgeOptions(),
                      strategy=strategy, backends=backends, progress=progress, gpus=gpus, judges=judges, generation=generation,
                      recover_timeout_s=recover_timeout_s, events=events)
        return run_id, batch.run()
    finally:
        try:
            if batch is not None:
                batch.close()
        except Exception:  # noqa: BLE001 - never hides the batch's own error
            pass
        if connected_here:
            ray.shutdown()
