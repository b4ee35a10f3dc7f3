"""Overlapped judging (kbench_lib.batch.overlap): the next candidate's worker runs beside the judge's checks
of the previous one, finds nothing of it, and is held at its gate before anything is measured."""
import os
import sys
import time
from pathlib import Path

import pytest

from kbench_lib.isolation import sandbox, server_pool
from kbench_lib.judging.pipeline import JudgeOptions
from kbench_lib.batch.overlap import OverlappingLane, Step
from kbench_lib.suite.problems import discover
from kbench_lib.scoring.records import read_records
from kbench_lib.batch.runner import run_batch

HONEST = (Path(__file__).parent / "fixtures" / "candidates" / "scale_add_relu_torch.py").read_text()

# looks, at import, for another judgement's job folder or result files wherever a worker can see
SPY = '''
import glob
import os

here = os.path.realpath(os.getcwd())
seen = [p for root in ("/dev/shm", "/tmp") for p in glob.glob(os.path.join(root, "kbench-job-*"))
        if not here.startswith(os.path.realpath(p))]
seen += [p for p in glob.glob("/dev/shm/**/*.kbt", recursive=True) if not os.path.realpath(p).startswith(here)]
if seen:
    raise RuntimeError(f"found another judgement's files: {seen[:3]}")
''' + HONEST


def _batch(fixtures, tmp_path, overlap: bool, run_id: str):
    probs = tmp_path / "problems" / "level1"
    probs.mkdir(parents=True, exist_ok=True)
    (probs / "1_Scale_Add_ReLU.py").write_text((fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py").read_text())
    cands = tmp_path / "cands" / "level1"
    cands.mkdir(parents=True, exist_ok=True)
    files = {"a": HONEST, "b": SPY, "c": (fixtures / "candidates" / "scale_add_relu_wrong.py").read_text(),
             "d": SPY.replace("self.scale = scale", "self.scale = scale  # again"),
             "e": (fixtures / "bad_candidates" / "segfault.py").read_text(), "f": SPY.replace("self.scale = scale", "self.scale = scale  # f")}
    for tag, src in files.items():
        (cands / f"1_Scale_Add_ReLU__{tag}.py").write_text(src)
    opts = JudgeOptions(device="cpu", timing_budget_s=0.2, min_trials=10, max_trials=50, warmup_ms=1.0, run_timeout_s=60)
    _, rows = run_batch(discover(tmp_path / "problems"), f"folder:{tmp_path / 'cands'}", run_id=run_id, runs_root=tmp_path / "runs",
                        opts=opts, progress=False, overlap=overlap)
    return rows


def _forkserver_pid_isolated() -> bool:
    server = server_pool.server(False)
    from kbench_lib.isolation.forkserver import CLONE_NEWPID

    return server is not None and bool(server.isolation & CLONE_NEWPID)


def test_overlapped_batch_gives_the_verdicts_of_one_at_a_time_and_leaves_nothing_to_find(fixtures, tmp_path):
    over = _batch(fixtures, tmp_path / "o", overlap=True, run_id="over")
    alone = _batch(fixtures, tmp_path / "s", overlap=False, run_id="alone")

    def outcome(rows):
        return sorted((r["sample"], r["correct"], r["failure"]) for r in rows)

    assert outcome(over) == outcome(alone)
    failures = sorted(str(r["failure"]) for r in over)
    assert failures.count("None") == 4, [(r["failure"], r["message"]) for r in over]  # the honest one and three spies
    assert "output_mismatch" in failures and "crash" in failures
    records = read_records(tmp_path / "o" / "runs", "over")
    stages = records["judge_stages"]
    gated = sum(any(k == "run_gate" for k, _ in s) for s in stages)
    if _forkserver_pid_isolated():
        # every candidate after the first whose predecessor ran a worker was started beside its checks
        assert gated >= 3
        # its wait at the gate is queue_s, left out of its judge_s (at most the gate's stage time, which
        # runs to the worker's next message)
        waited = records[records["queue_s"].notna()]
        assert len(waited) >= 3 and (waited["queue_s"] >= 0).all() and (waited["judge_s"] > 0).all()
        gate = waited["judge_stages"].map(lambda s: dict(s)["run_gate"])
        assert (waited["queue_s"] <= gate + 0.01).all()
    else:
        assert gated == 0  # no overlap without a PID namespace
    assert not any(any(k == "run_gate" for k, _ in s) for s in read_records(tmp_path / "s" / "runs", "alone")["judge_stages"])


def test_a_gated_child_waits_until_the_gate_opens(tmp_path):
    script = tmp_path / "gate.py"
    script.write_text("import os, sys, time\nfd = int(os.environ['KBENCH_GATE_FD'])\nos.read(fd, 1)\nprint(time.monotonic())\n")
    run = sandbox.start_isolated([str(script)], workdir=str(tmp_path / "w"), timeout_s=4.0, gated=True)
    time.sleep(5.0)  # longer than the limit: time behind a shut gate does not count against it
    opened = time.monotonic()
    run.open_gate()
    res = run.result()
    assert not res.timed_out and res.returncode == 0, res.log
    assert float(res.log.strip().splitlines()[-1]) >= opened


def test_a_gated_child_still_has_its_limit_after_the_gate(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text("import time\ntime.sleep(60)\n")
    run = sandbox.start_isolated([str(script)], workdir=str(tmp_path / "w"), timeout_s=1.0, gated=True)
    run.open_gate()
    t0 = time.monotonic()
    res = run.result()
    assert res.timed_out and time.monotonic() - t0 < 10


class _Work:
    """A judgement's surface as the lane sees it, with a log of what happened when."""

    def __init__(self, name, log, verdict, raises=None):
        self.name, self.log, self.verdict, self.raises = name, log, verdict, raises
        self.isolated = True

    def wait(self):
        self.log.append(("ended", self.name))

    def detach(self):
        self.log.append(("detached", self.name))
        return True

    def open_gate(self):
        self.log.append(("gate", self.name))

    def finish(self):
        self.log.append(("finished", self.name))
        if self.raises:
            raise self.raises
        return self.verdict


class _V:
    def __init__(self, failure=None):
        self.failure = failure


def test_the_lane_orders_its_work_and_judges_a_neighbours_out_of_memory_again_alone():
    import torch

    log, recorded = [], []
    queue = ["a", "b", "c"]
    # a's checks run the judge out of memory beside b's worker; b's worker runs out beside a's checks
    outcomes = {"a": [torch.cuda.OutOfMemoryError("judge"), _V()], "b": [_V("oom"), _V()], "c": [_V()]}

    def begin(name, gated):
        log.append(("begin", name, gated))
        out = outcomes[name].pop(0)
        raises = out if isinstance(out, BaseException) else None
        return Step(name, judgement=_Work(name, log, None if raises else out, raises))

    def finish(step, beside):
        try:
            return step.judgement.finish()
        except torch.cuda.OutOfMemoryError:
            assert beside
            return None

    lane = OverlappingLane(take=lambda wait: queue.pop(0) if queue else None, ready=lambda a: True, begin=begin, finish=finish,
                           record=lambda step, v: recorded.append((step.arrival, v.failure)))
    lane.run()
    assert sorted(recorded) == [("a", None), ("b", None), ("c", None)]
    assert lane.judged_again == 2
    # b starts only after a's worker ended and a's folder is gone; its gate opens only after a is finished
    i = log.index
    assert i(("ended", "a")) < i(("detached", "a")) < i(("begin", "b", True)) < i(("finished", "a")) < i(("gate", "b"))
    # both are judged again alone, after b, with nothing begun beside them, before c
    begins = [e for e in log if e[0] == "begin"]
    assert begins == [("begin", "a", False), ("begin", "b", True), ("begin", "a", False), ("begin", "b", False), ("begin", "c", False)]
    assert [e for e in log if e[0] == "detached"] == [("detached", "a")]


def test_detach_removes_the_job_folder_and_the_checks_still_read_the_results(scale_add_relu, fast_cpu_opts, tmp_path):
    from kbench_lib.core.candidates import Candidate
    from kbench_lib.judging.pipeline import prepare_problem, start_judgement

    prep = prepare_problem(scale_add_relu, fast_cpu_opts)
    j = start_judgement(scale_add_relu, Candidate(source=HONEST, backend="torch"), fast_cpu_opts, prepared=prep, gated=True)
    assert j.wd.is_dir()
    j.wait()
    assert j.detach() and not j.wd.exists()  # nothing of it left for the next worker to find
    v = j.finish()
    assert v.correct and v.failure is None and v.runtime_ms, (v.failure, v.message)
    assert "run_gate" in v.stage_s


def _shm_probe_candidate(marker: str, drop: str) -> str:
    return f'''
import os
if os.path.exists({marker!r}):
    raise RuntimeError("saw a file another process left in /dev/shm")
with open({drop!r}, "w") as f:
    f.write("answers for the next candidate")
''' + HONEST


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
def test_a_worker_gets_a_dev_shm_of_its_own(scale_add_relu, fast_cpu_opts, tmp_path):
    """What one candidate leaves in /dev/shm the next never sees (both see a batch's same inputs),
    and nothing it writes there outlives it; through the fork server and through unshare."""
    import uuid

    from kbench_lib.core.candidates import Candidate
    from kbench_lib.judging.pipeline import judge

    if not _forkserver_pid_isolated() or "--pid" not in sandbox.isolation_prefix(False):
        pytest.skip("no PID and mount namespaces here")
    marker = f"/dev/shm/kbench-marker-{uuid.uuid4().hex}"
    Path(marker).write_text("left by someone else")
    try:
        for forkserver in ("1", "0"):
            drop = f"/dev/shm/kbench-drop-{uuid.uuid4().hex}"
            old = os.environ.get("KBENCH_FORKSERVER")
            os.environ["KBENCH_FORKSERVER"] = forkserver
            try:
                v = judge(scale_add_relu, Candidate(source=_shm_probe_candidate(marker, drop), backend="torch"), fast_cpu_opts)
            finally:
                if old is None:
                    os.environ.pop("KBENCH_FORKSERVER", None)
                else:
                    os.environ["KBENCH_FORKSERVER"] = old
            assert v.correct and v.failure is None, (forkserver, v.failure, v.message)
            assert not os.path.exists(drop), forkserver
    finally:
        os.unlink(marker)
