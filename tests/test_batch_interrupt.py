"""Ctrl-C on a batch: the command ends at once with one line and status 130, the worker under way is
ended rather than waited for (in the judge service, or a notebook, the process lives on and its
judging threads with it), its verdict is not recorded (a killed worker would read as a crash), and
the verdicts recorded before it stay."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from kbench_lib.scoring.records import read_records

from conftest import FIXTURES, REPO

pytestmark = pytest.mark.slow

BUSY = '''import time
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        end = time.monotonic() + 900
        while time.monotonic() < end:  # busy, so no idle limit ends it: only its time limit, or Ctrl-C
            pass
        return torch.relu(x)
'''


def _corpus(tmp_path):
    """Two rows: an honest kernel, then one that is busy for 15 minutes in its first call."""
    [honest] = [json.loads(line) for line in (FIXTURES / "corpora" / "tiny.json").read_text().splitlines()[:1]]
    corpus = tmp_path / "two.json"
    corpus.write_text("\n".join(json.dumps(r) for r in (honest, {**honest, "task_id": 20, "custom_code": BUSY})) + "\n")
    return corpus


def _until(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def _ctrl_c_once(ready, settle_s: float, poll_s: float):
    """A thread that sends this process SIGINT (as Ctrl-C does) ``settle_s`` after ``ready()``, unless
    the returned event is set first (the batch is over: it would land in another test); the time it
    was sent goes into the returned list."""
    over = threading.Event()
    sent: list[float] = []

    def press():
        deadline = time.monotonic() + 300
        while not ready() and time.monotonic() < deadline and not over.is_set():
            time.sleep(poll_s)
        time.sleep(settle_s)
        if not over.is_set():
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=press, daemon=True).start()
    return over, sent


def test_ctrl_c_ends_the_judgement_under_way_and_records_only_what_was_judged(tmp_path):
    corpus = _corpus(tmp_path)
    env = {**os.environ, "KBENCH_SERVE": "off", "KBENCH_CACHE": str(tmp_path / "cache")}
    cmd = subprocess.Popen([sys.executable, "-m", "kbench_lib.cli", "run", "--model", f"cuda-l1:{corpus}", "--device", "cpu",
                            "--runs-root", str(tmp_path / "runs"), "--run-id", "intr", "--timing-budget", "0.1", "--quiet"],
                           env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        records = tmp_path / "runs" / "intr" / "records"
        deadline = time.monotonic() + 300
        while not (records.exists() and any(records.glob("*.parquet"))):
            assert time.monotonic() < deadline and cmd.poll() is None, "no record was written"
            time.sleep(0.2)
        time.sleep(3)  # the busy candidate's worker is under way
        cmd.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, err = cmd.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        cmd.kill()
    assert cmd.returncode == 130, err
    assert err.strip().splitlines()[-1] == "kbench: interrupted" and "Traceback" not in err, err
    assert took < 30, took
    df = read_records(tmp_path / "runs", "intr")
    assert list(df["problem"]) == ["level1/19_ReLU_Activation"] and bool(df["correct"].iloc[0])


def test_an_interrupted_batch_leaves_no_judging_thread_behind(tmp_path, fast_cpu_opts, monkeypatch):
    """The process goes on after the interrupt (the judge service, a notebook), so nothing may go on
    judging in it. The batch runs in this (the main) thread, where a SIGINT lands as Ctrl-C's does."""
    from kbench_lib.batch.runner import run_batch
    from kbench_lib.generation.corpus import corpus_problems

    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    corpus = f"cuda-l1:{_corpus(tmp_path)}"
    problems = corpus_problems(corpus, tmp_path / "problems")
    records = tmp_path / "runs" / "intr" / "records"
    # 3 s after the first record: the busy candidate's worker is under way
    over, sent = _ctrl_c_once(lambda: records.exists() and any(records.glob("*.parquet")), 3, 0.2)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_batch(problems, corpus, run_id="intr", runs_root=tmp_path / "runs", opts=fast_cpu_opts, progress=False)
    finally:
        over.set()
    assert sent and time.monotonic() - sent[0] < 30
    _until(lambda: not any(th.name.startswith("kbench-judge-") for th in threading.enumerate()), 15,
           "a judging thread goes on after the interrupt")
    assert list(read_records(tmp_path / "runs", "intr")["problem"]) == ["level1/19_ReLU_Activation"]


SLOW_REFERENCE = '''"""relu(x), its reference slow: a second and a half a call."""
import time

import torch
import torch.nn as nn

DERIVE_VARIANTS = False
MARK = {mark!r}


class Model(nn.Module):
    def forward(self, x):
        open(MARK, "a").close()  # the reference is being run
        for _ in range(30):
            time.sleep(0.05)
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
'''


def test_an_interrupt_stops_the_judge_in_its_own_work(tmp_path, fast_cpu_opts, monkeypatch):
    """Ctrl-C while the judging thread prepares a reference (its model run on every input set: 1.5 s
    a call here, seconds to minutes for a large model): the batch ends within seconds, not after
    the preparation, and no judging thread goes on."""
    from kbench_lib.batch.runner import run_batch
    from kbench_lib.suite.problems import load_problem

    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    mark = tmp_path / "reference-running"
    level = tmp_path / "problems" / "level1"
    level.mkdir(parents=True)
    (level / "3_Slow_ReLU.py").write_text(SLOW_REFERENCE.format(mark=str(mark)))
    problem = load_problem(level / "3_Slow_ReLU.py")
    cands = tmp_path / "cands"
    cands.mkdir()
    (cands / "3_Slow_ReLU__0.py").write_text(
        "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n")
    over, sent = _ctrl_c_once(mark.exists, 1.0, 0.05)  # a few of the reference's calls in
    try:
        with pytest.raises(KeyboardInterrupt):
            run_batch([problem], f"folder:{cands}", run_id="slow", runs_root=tmp_path / "runs", opts=fast_cpu_opts, progress=False)
        ended = time.monotonic()
    finally:
        over.set()
    # the preparation runs the reference on at least eight input sets (12 s): the batch ended in its course
    assert sent and ended - sent[0] < 5, ended - sent[0]
    _until(lambda: not any(th.name.startswith("kbench-judge-") for th in threading.enumerate()), 5,
           "a judging thread goes on after the interrupt")
    assert not (tmp_path / "runs" / "slow" / "records").exists() or not any((tmp_path / "runs" / "slow" / "records").glob("*.parquet"))
