"""The judge service (kbench_lib.service, docs/SERVICE.md): a command handed to it leaves the records
it would leave in its own process; by default a command starts the service where none runs and later ones use it
(``use``: a running one only, none started); Ctrl-C ends the command, not the service; a service that dies
mid-command ends the command with one line and status 4; an idle service ends by itself; an
argument error is reported before any service starts. Each test has its own service folder, cache
and runs folder, so that its service is its own."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbench_lib.service import key as keys

pytestmark = pytest.mark.slow  # each test starts a service: torch and the judge imported (make test-fast leaves them out)

REPO = Path(__file__).resolve().parent.parent
RUN = ["run", "problems/level1", "--model", "eager", "--device", "cpu", "--timing-budget", "0.1"]


@pytest.fixture
def env(tmp_path):
    e = {**os.environ, "KBENCH_SERVE": "auto", "KBENCH_SERVE_DIR": str(tmp_path / "serve"), "KBENCH_CACHE": str(tmp_path / "cache"),
         "KBENCH_RUNS_ROOT": str(tmp_path / "runs"), "PYTHONPATH": str(REPO)}
    yield e
    subprocess.run(_kbench("serve", "--stop"), env=e, cwd=REPO, capture_output=True, timeout=60)


def _kbench(*args: str) -> list[str]:
    return [sys.executable, "-m", "kbench_lib.cli", *args]


def _status(env) -> dict | None:
    done = subprocess.run(_kbench("serve", "--status"), env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    return json.loads(done.stdout) if done.returncode == 0 else None


def _records(env, run_id: str):
    from kbench_lib.scoring.records import read_records

    return read_records(env["KBENCH_RUNS_ROOT"], run_id).sort_values("problem").reset_index(drop=True)


def _wait_for_a_record(env, run_id: str, timeout_s: float = 240) -> None:
    folder = Path(env["KBENCH_RUNS_ROOT"]) / run_id / "records"
    deadline = time.monotonic() + timeout_s
    while not (folder.exists() and any(folder.glob("*.parquet"))):
        assert time.monotonic() < deadline, "no record was written"
        time.sleep(0.2)


def test_a_command_in_the_service_leaves_the_records_of_its_own_process(env):
    first = subprocess.run(_kbench(*RUN, "--filter", "19_", "--run-id", "svc-1", "--json"), env=env, cwd=REPO,
                           capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout.strip().splitlines()[-1])["n"] == 1  # stdout reaches the command as written
    second = subprocess.run(_kbench(*RUN, "--filter", "19_", "--run-id", "svc-2"), env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    assert _status(env)["served"] == 2  # both ran in the one service the first started
    alone = subprocess.run(_kbench(*RUN, "--filter", "19_", "--run-id", "own"), env={**env, "KBENCH_SERVE": "off"}, cwd=REPO,
                           capture_output=True, text=True, timeout=600)
    assert alone.returncode == 0, alone.stderr
    assert _status(env)["served"] == 2
    columns = ["problem", "model", "correct", "failure", "device", "backend"]
    for run_id in ("svc-1", "svc-2"):
        served = _records(env, run_id)
        assert served[columns].equals(_records(env, "own")[columns])
        assert [sorted(f.split(":")[0] for f in fl) for fl in served["flags"]] == \
            [sorted(f.split(":")[0] for f in fl) for fl in _records(env, "own")["flags"]]


def test_ctrl_c_ends_the_command_and_not_the_service(env):
    cmd = subprocess.Popen(_kbench(*RUN, "--filter", "1_", "2_", "3_", "4_", "--run-id", "intr"), env=env, cwd=REPO,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_a_record(env, "intr")
        cmd.send_signal(signal.SIGINT)
        _, err = cmd.communicate(timeout=120)
    finally:
        cmd.kill()
    assert cmd.returncode == 130, err
    assert "interrupted" in err
    kept = len(_records(env, "intr"))
    assert kept >= 1
    assert _status(env) is not None  # the service lives on, and takes the next command
    again = subprocess.run(_kbench(*RUN, "--filter", "19_", "--run-id", "after"), env=env, cwd=REPO, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr


def test_a_service_that_dies_mid_command_ends_it_with_one_line(env):
    cmd = subprocess.Popen(_kbench(*RUN, "--filter", "1_", "2_", "3_", "4_", "--run-id", "lost"), env=env, cwd=REPO,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_a_record(env, "lost")
        os.kill(_status(env)["pid"], signal.SIGKILL)
        _, err = cmd.communicate(timeout=120)
    finally:
        cmd.kill()
    assert cmd.returncode == 4
    assert "the judge service ended during the command" in err and "--run-id" in err
    assert len(_records(env, "lost")) >= 1  # what it recorded is kept


def test_an_idle_service_ends_by_itself(env):
    serve = subprocess.run(_kbench("serve", "--idle-timeout", "0.5"), env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert serve.returncode == 0, serve.stderr
    assert "idle for 0.5 s, ending" in serve.stdout
    assert _status(env) is None


@pytest.mark.parametrize("argv, line", [
    (("run", "problems/level1", "--no-such-option"), "--no-such-option"),
    (("run", "problems/level1", "--model", "bogus"), "kbench run: unknown model 'bogus': use "),
    (("run", "problems/level9"), "kbench run: no such problem folder or file: problems/level9"),
    (("baselines", "problems/level9"), "kbench baselines: no such problem folder or file: problems/level9"),
    (("run", "--model", "cuda-l1:/no/such.jsonl"), "kbench run: cuda-l1 corpus '/no/such.jsonl': no such file"),
    (("eval", "problems/level1/0_None.py", "c.py"), "kbench eval: cannot read problem file problems/level1/0_None.py: no such file"),
    (("eval", "level1/51_ReLU", "no_such_candidate.py"), "kbench eval: cannot read candidate file no_such_candidate.py: no such file"),
    (("eval", "level9/none", "c.py"), f"kbench eval: no problem 'level9/none' under {REPO / 'problems'}"),
    (("audit", "cuda-l1:/no/such.jsonl"), "kbench audit: cuda-l1 corpus '/no/such.jsonl': no such file"),
    (("audit", "kernels.jsonl"), "kbench audit: unknown corpus format 'kernels.jsonl': choose one of cuda-l1"),
])
def test_an_argument_error_is_reported_before_any_service_starts(env, argv, line):
    """Arguments that name nothing (an option, a model, a file, a corpus) are one line at once: no
    service is looked for or started (one started for a refused command would stay up for its idle time)."""
    done = subprocess.run(_kbench(*argv), env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and line in done.stderr
    if not line.startswith("--"):
        assert done.stderr.count("\n") == 1 and done.stderr.startswith(line), done.stderr
    assert not Path(env["KBENCH_SERVE_DIR"]).exists()  # no service was looked for, none started


def test_a_service_key_follows_the_code_and_the_judges_environment(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("x = 1\n")
    base = {"PATH": "/usr/bin", "KBENCH_CACHE": "/c", "HOME": "/h"}
    k = keys.service_key(base, pkg)
    assert keys.service_key({**base, "KBENCH_SERVE": "auto", "KBENCH_SERVE_DIR": "/s", "OPENAI_API_KEY": "sk", "TERM": "x"}, pkg) == k
    assert keys.service_key({**base, "KBENCH_CACHE": "/other"}, pkg) != k
    assert keys.service_key({**base, "CUDA_VISIBLE_DEVICES": "1"}, pkg) != k
    st = (pkg / "a.py").stat()
    os.utime(pkg / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert keys.service_key(base, pkg) != k  # an edit to the library: another service


def test_a_service_folder_another_user_may_write_is_refused(tmp_path, monkeypatch):
    d = tmp_path / "open"
    d.mkdir()
    d.chmod(0o777)
    monkeypatch.setenv(keys.DIR_ENV, str(d))
    with pytest.raises(PermissionError):
        keys.service_dir()


def test_by_default_a_command_starts_a_service_and_later_ones_use_it(env):
    default = {k: v for k, v in env.items() if k != "KBENCH_SERVE"}
    first = subprocess.run(_kbench(*RUN, "--filter", "19_", "--run-id", "first"), env=default, cwd=REPO, capture_output=True, text=True,
                           timeout=600)
    assert first.returncode == 0, first.stderr
    assert "started the judge service" in first.stderr  # the user is told a process stays behind, and how to end it
    assert _status(default)["served"] == 1
    again = subprocess.run(_kbench(*RUN, "--filter", "19_", "--run-id", "again"), env=default, cwd=REPO, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr
    assert "started the judge service" not in again.stderr
    assert _status(default)["served"] == 2
    assert len(_records(default, "again")) == 1


def test_use_runs_a_command_in_a_running_service_and_starts_none(env):
    use = {**env, "KBENCH_SERVE": "use"}
    alone = subprocess.run(_kbench(*RUN, "--filter", "19_", "--run-id", "own"), env=use, cwd=REPO, capture_output=True, text=True,
                           timeout=600)
    assert alone.returncode == 0, alone.stderr
    assert _status(use) is None  # none was running, none was started
    serve = subprocess.Popen(_kbench("serve", "--idle-timeout", "120"), env=use, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert "kbench serve: pid" in serve.stdout.readline()  # it listens
        done = subprocess.run(_kbench(*RUN, "--filter", "19_", "--run-id", "served"), env=use, cwd=REPO, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
        assert _status(use)["served"] == 1
    finally:
        serve.terminate()
        serve.wait(timeout=60)


@pytest.mark.gpu
def test_on_a_gpu_a_judgement_in_the_service_is_the_judgement_of_its_own_process(env):
    """The service on a GPU: the judge's CUDA context lives on between commands; a Triton candidate
    judged through it twice, and once in its own process, is correct, unflagged and timed each time."""
    fixtures = REPO / "tests" / "fixtures"
    cmd = _kbench("eval", str(fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py"),
                  str(fixtures / "candidates" / "scale_add_relu_triton.py"), "--device", "cuda", "--timing-budget", "0.5", "--json")
    verdicts = []
    for mode in ("auto", "auto", "off"):
        done = subprocess.run(cmd, env={**env, "KBENCH_SERVE": mode}, cwd=REPO, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        verdicts.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert _status(env)["served"] == 2
    for v in verdicts:
        assert v["correct"] and not v["flags"], v
        assert v["speedup"] and v["speedup"] > 0.3, v
