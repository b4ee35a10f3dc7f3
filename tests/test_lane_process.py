"""A lane judged by a process of its own (kbench_lib.batch.lane_process), as a batch over several GPUs
does: the same verdicts as lane threads, its timeline back in the batch's process, and a lane
process that dies is replaced without losing or doubling a record (on the CPU, so CI runs it)."""
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from kbench_lib.batch import lane_host, runner
from kbench_lib.judging.pipeline import JudgeOptions
from kbench_lib.batch.lane_host import lane_pids
from kbench_lib.generation.models import get_model, iter_arrivals
from kbench_lib.suite.problems import discover
from kbench_lib.scoring.records import RecordWriter, read_records

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _no_lane_processes_left():
    yield
    lane_host.close_all()
    assert not lane_pids()


def _layout(tmp_path: Path, fixtures: Path, cands: dict[str, str]) -> tuple[list, str]:
    probs = tmp_path / "problems" / "level1"
    probs.mkdir(parents=True)
    src = (fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py").read_text()
    (probs / "1_Scale_Add_ReLU.py").write_text(src)
    (probs / "2_Broken_Reference.py").write_text(src.replace("torch.relu(a * self.scale + b)", "a.nope()"))
    folder = tmp_path / "cands" / "level1"
    folder.mkdir(parents=True)
    for name, fixture in cands.items():
        (folder / name).write_text((fixtures / fixture).read_text())
    return discover(tmp_path / "problems"), f"folder:{tmp_path / 'cands'}"


def _batch(problems, model: str, root: Path, run_id: str, devices: list[str], processes: bool, opts: JudgeOptions) -> list[dict]:
    batch = runner._Batch(RecordWriter(root, run_id), run_id, model, "single", opts, devices, 0, False, lane_processes=processes)
    return batch.run(iter_arrivals(get_model(model, None, None), problems, skip=set()), set())


class _Events(logging.Handler):
    """The batch's timeline; ``on_begin(n)`` is called at the n-th judgement begun (from 1)."""

    def __init__(self, on_begin=None):
        super().__init__(logging.DEBUG)
        self.events, self.on_begin, self.begun = [], on_begin, 0

    def emit(self, record):
        self.events.append((getattr(record, "event", None), getattr(record, "device", None), getattr(record, "key", None)))
        if record.event == "begin":
            self.begun += 1
            if self.on_begin is not None:
                self.on_begin(self.begun)

    def __enter__(self):
        log = logging.getLogger("kbench.timeline")
        self.level = log.level
        log.setLevel(logging.DEBUG)
        log.addHandler(self)
        return self

    def __exit__(self, *exc):
        log = logging.getLogger("kbench.timeline")
        log.removeHandler(self)
        log.setLevel(self.level)


def _outcomes(rows) -> list[tuple]:
    return sorted((r["problem"], r["sample"], r["failure"] or "none") for r in rows)


def test_two_lane_processes_record_the_verdicts_of_two_lane_threads(fixtures, tmp_path):
    problems, model = _layout(tmp_path, fixtures, {
        "1_Scale_Add_ReLU.py": "candidates/scale_add_relu_wrong.py", "1_Scale_Add_ReLU__b.py": "bad_candidates/syntax_error.py",
        "1_Scale_Add_ReLU__c.py": "bad_candidates/segfault.py", "2_Broken_Reference.py": "candidates/scale_add_relu_wrong.py"})
    opts = JudgeOptions(device="cpu", timing=False)
    threads = _batch(problems, model, tmp_path / "runs", "threads", ["cpu", "cpu"], False, opts)
    with _Events() as timeline:
        processes = _batch(problems, model, tmp_path / "runs", "processes", ["cpu", "cpu"], True, opts)
    assert _outcomes(processes) == _outcomes(threads)
    assert sorted(f for _, _, f in _outcomes(processes)) == ["crash", "judge_error", "load_error", "output_mismatch"]
    assert len(read_records(tmp_path / "runs", "processes")) == 4
    # the lane processes' timeline came back: each judgement begun, under the batch's name for its device
    begun = [e for e in timeline.events if e[0] == "begin"]
    assert len(begun) == 3 and {d for _, d, _ in begun} == {"cpu"}, timeline.events
    # the two lane processes wait for the next batch, which they judge
    waiting = sorted(lane_pids())
    assert len(waiting) == 2
    again = _batch(problems, model, tmp_path / "runs", "again", ["cpu", "cpu"], True, opts)
    assert _outcomes(again) == _outcomes(threads) and sorted(lane_pids()) == waiting


def test_a_dead_lane_process_is_replaced_and_judges_again_what_it_held(fixtures, tmp_path, caplog):
    problems, model = _layout(tmp_path, fixtures, {
        "1_Scale_Add_ReLU.py": "bad_candidates/hang.py", "1_Scale_Add_ReLU__b.py": "candidates/scale_add_relu_wrong.py"})
    problems = [p for p in problems if p.key.endswith("1_Scale_Add_ReLU")]
    killed: list[int] = []

    def kill_first(n: int) -> None:  # the lane process, as it begins its first judgement (the hanging candidate)
        if n == 1:
            (pid,) = lane_pids()
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)

    opts = JudgeOptions(device="cpu", timing=False, run_timeout_s=4.0, idle_timeout_s=0)
    with caplog.at_level(logging.WARNING, logger="kbench"), _Events(kill_first) as timeline:
        rows = _batch(problems, model, tmp_path / "runs", "dead", ["cpu"], True, opts)
    assert killed and any("died" in r.getMessage() for r in caplog.records)
    # the hanging sample, taken by the killed process, was judged again: every sample once, as without the death
    assert _outcomes(rows) == [("level1/1_Scale_Add_ReLU", 0, "timeout"), ("level1/1_Scale_Add_ReLU", 1, "output_mismatch")]
    assert len(read_records(tmp_path / "runs", "dead")) == 2
    assert [e[0] for e in timeline.events].count("begin") == 3
    if os.path.isdir("/dev/shm"):  # the dead process's job folders are gone
        assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"kbench-job-{killed[0]}-")]


def test_a_sample_two_lane_processes_died_judging_is_a_judge_error(fixtures, tmp_path):
    problems, model = _layout(tmp_path, fixtures, {"1_Scale_Add_ReLU.py": "candidates/scale_add_relu_wrong.py"})
    problems = [p for p in problems if p.key.endswith("1_Scale_Add_ReLU")]

    def kill(n: int) -> None:  # at its first and second judgement begun: the same sample both times
        if n <= 2:
            for pid in lane_pids():
                os.kill(pid, signal.SIGKILL)

    with _Events(kill):
        rows = _batch(problems, model, tmp_path / "runs", "twice", ["cpu"], True, JudgeOptions(device="cpu", timing=False))
    assert len(rows) == 1 and rows[0]["failure"] == "judge_error" and "died twice" in rows[0]["message"], rows
    assert rows[0]["device"] == "cpu"


def test_a_lane_process_starts_its_zygote_before_it_imports_torch():
    """What the lane process does before its zygote starts (its fork server's environment, the
    zygote's launch) imports no torch: the zygote's warm-up is the longest wait of a lane's start."""
    code = ("import sys\nfrom kbench_lib.batch import lane_process\nfrom kbench_lib.isolation import server_pool, sandbox, forkserver\n"
            "server_pool.server_env(True)\nassert 'torch' not in sys.modules, 'torch imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parent.parent)


def test_a_sample_that_cannot_reach_a_lane_process_is_a_judge_error_and_the_rest_goes_on(fixtures, tmp_path):
    from kbench_lib.generation.models import Arrival

    problems, model = _layout(tmp_path, fixtures, {"1_Scale_Add_ReLU.py": "candidates/scale_add_relu_wrong.py",
                                                   "1_Scale_Add_ReLU__b.py": "candidates/scale_add_relu_wrong.py"})
    problems = [p for p in problems if p.key.endswith("1_Scale_Add_ReLU")]
    arrivals = list(iter_arrivals(get_model(model, None, None), problems, skip=set()))
    first = arrivals[0]
    odd = replace(first.sample, meta={"callback": lambda: None})  # a model's metadata that pickle cannot carry
    arrivals[0] = Arrival(first.problem, odd, first.error, first.last)
    opts = JudgeOptions(device="cpu", timing=False)
    batch = runner._Batch(RecordWriter(tmp_path / "runs", "odd"), "odd", model, "single", opts, ["cpu"], 0, False, lane_processes=True)
    rows = batch.run(iter(arrivals), set())
    got = {r["sample"]: r for r in rows}
    assert got[0]["failure"] == "judge_error" and "could not be sent" in got[0]["message"], got[0]
    assert got[1]["failure"] == "output_mismatch"


def test_lane_processes_started_ahead_are_the_ones_a_batch_takes(fixtures, tmp_path):
    problems, model = _layout(tmp_path, fixtures, {"1_Scale_Add_ReLU.py": "candidates/scale_add_relu_wrong.py"})
    problems = [p for p in problems if p.key.endswith("1_Scale_Add_ReLU")]
    lane_host.start(["cpu"], wait=True)  # its fork server up before the batch
    (ready,) = lane_pids()
    with _Events() as timeline:
        rows = _batch(problems, model, tmp_path / "runs", "ahead", ["cpu"], True, JudgeOptions(device="cpu", timing=False))
    assert _outcomes(rows) == [("level1/1_Scale_Add_ReLU", 0, "output_mismatch")] and lane_pids() == [ready]
    # its server was there at the lane's first look, right after it prepared the problem (a cold lane
    # process prepares what it can, then begins its first judgement before its server is seen)
    assert [e[0] for e in timeline.events][:3] == ["prepared", "server_seen", "begin"], timeline.events


def test_a_waiting_lane_process_that_died_is_not_given_the_batch(fixtures, tmp_path):
    problems, model = _layout(tmp_path, fixtures, {"1_Scale_Add_ReLU.py": "candidates/scale_add_relu_wrong.py"})
    problems = [p for p in problems if p.key.endswith("1_Scale_Add_ReLU")]
    lane_host.start(["cpu"], wait=False)
    (dead,) = lane_pids()
    os.kill(dead, signal.SIGKILL)
    rows = _batch(problems, model, tmp_path / "runs", "after", ["cpu"], True, JudgeOptions(device="cpu", timing=False))
    assert _outcomes(rows) == [("level1/1_Scale_Add_ReLU", 0, "output_mismatch")]
    assert dead not in lane_pids() and len(lane_pids()) == 1


def test_a_child_just_past_exec_is_known_as_a_lane_process_and_an_exited_one_is_not():
    """The kernel lets the parent of an exec go on before it sets the child's command line: CI once
    read it empty right after ``lane_host.start`` (1 child in 300-1000 on a busy 2-core machine,
    so without the re-read this fails only now and then)."""
    from kbench_lib.batch.lane_host import _is_lane_process, proc_state

    for _ in range(200):
        child = subprocess.Popen(["/bin/sh", "-c", "sleep 5", "kbench_lib.batch.lane_process"])
        try:
            assert _is_lane_process(str(child.pid))
        finally:
            child.kill()
            child.wait()
    exited = subprocess.Popen(["/bin/sh", "-c", "exit 0", "kbench_lib.batch.lane_process"])
    try:
        while proc_state(str(exited.pid)) != "Z":
            time.sleep(0.001)
        assert not _is_lane_process(str(exited.pid))
    finally:
        exited.wait()
