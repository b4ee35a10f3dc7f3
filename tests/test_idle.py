"""The idle limit (kbench_lib.isolation.idle): a worker whose processes use no CPU time is ended as a
timeout long before its time limit; one that computes, or whose child process computes (a
compiler), or that waits behind its gate, is not."""
import subprocess
import sys
import time

from kbench_lib.isolation import sandbox
from kbench_lib.core.candidates import load_candidate
from kbench_lib.isolation.idle import IdleWatch, session_cpu_s
from kbench_lib.judging.pipeline import judge

BUSY = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}:\n    pass\n"


def _script(tmp_path, code, name="s.py"):
    path = tmp_path / name
    path.write_text(code)
    return str(path)


def test_session_cpu_counts_every_process_of_the_session(tmp_path):
    busy = _script(tmp_path, BUSY.format(s=1.0), "busy.py")
    parent = _script(tmp_path, f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, {busy!r}])\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, parent], start_new_session=True)
    try:
        watch = IdleWatch(proc.pid, time.monotonic())
        deadline = time.monotonic() + 60
        while (session_cpu_s(proc.pid) or 0) < 1.0 and time.monotonic() < deadline:
            assert watch.idle_s(time.monotonic()) < 30  # the grandchild's work is the session's
            time.sleep(0.2)
        assert session_cpu_s(proc.pid) >= 1.0
        time.sleep(1.5)  # the grandchild has ended; the parent sleeps
        watch.idle_s(time.monotonic())
        time.sleep(1.5)
        assert watch.idle_s(time.monotonic()) >= 1.0
    finally:
        proc.kill()
        proc.wait()
    assert session_cpu_s(2**22 + 1) is None  # a session of nobody


def test_a_sleeping_child_is_ended_at_its_idle_limit(tmp_path):
    code = "import subprocess, time\nsubprocess.Popen(['sleep', '300'])\ntime.sleep(300)\n"
    res = sandbox.run_isolated([_script(tmp_path, code)], workdir=str(tmp_path / "w"), timeout_s=120, idle_timeout_s=1.5)
    assert res.timed_out and res.idle_s is not None and res.idle_s >= 1.5
    assert res.wall_s < 60  # the idle limit ended it, not the 120 s one


def test_a_child_that_computes_or_waits_on_its_own_child_is_not_idle(tmp_path):
    busy = _script(tmp_path, BUSY.format(s=2.5), "busy.py")
    for code in (BUSY.format(s=2.5),  # longer than the idle limit, all of it on the CPU
                 f"import subprocess, sys\nsubprocess.run([sys.executable, {busy!r}], check=True)\n"):  # a compiler's wait
        res = sandbox.run_isolated([_script(tmp_path, code)], workdir=str(tmp_path / "w"), timeout_s=120, idle_timeout_s=1.0)
        assert not res.timed_out and res.returncode == 0 and res.idle_s is None, res.log


def test_time_behind_a_shut_gate_is_not_idle(tmp_path):
    code = "import os, time\nos.read(int(os.environ['KBENCH_GATE_FD']), 1)\n" + BUSY.format(s=0.5)
    run = sandbox.start_isolated([_script(tmp_path, code)], workdir=str(tmp_path / "w"), timeout_s=120, gated=True,
                                 idle_timeout_s=1.0)
    time.sleep(3.0)  # three idle limits behind the gate
    res = run.result()
    assert not res.timed_out and res.returncode == 0, res.log


def test_a_sleeping_candidate_is_a_timeout_at_the_idle_limit(scale_add_relu, fixtures, fast_cpu_opts):
    """Through the judge and its fork server: the hang of tests/fixtures ends at the idle limit, in its
    correctness stage, with a message that says why."""
    fast_cpu_opts.run_timeout_s, fast_cpu_opts.idle_timeout_s = 120, 2.0
    v = judge(scale_add_relu, load_candidate(fixtures / "bad_candidates" / "hang.py"), fast_cpu_opts)
    assert v.failure == "timeout" and "sat idle" in v.message and "correctness" in v.message, v.message
    assert v.judge_s < 60
