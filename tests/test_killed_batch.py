"""A batch killed mid-way (SIGKILL of the judge, no chance to clean up) loses no finished record,
leaves no candidate process running, and leaves nothing in the temporary folders once the run is
resumed; the resumed run judges only what was missing."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbench_lib.scoring.records import read_records

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (through /proc's children lists)."""
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            for k in kids:
                if k not in found:
                    found.add(k)
                    todo.append(k)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _layout(tmp_path: Path, fixtures: Path) -> tuple[Path, Path]:
    probs = tmp_path / "problems" / "level1"
    probs.mkdir(parents=True)
    (probs / "1_Scale_Add_ReLU.py").write_text((fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py").read_text())
    cands = tmp_path / "cands" / "level1"
    cands.mkdir(parents=True)
    for tag, src in [("a", "candidates/scale_add_relu_wrong.py"), ("b", "bad_candidates/raises.py"),
                     ("c", "bad_candidates/hang.py"), ("d", "bad_candidates/wrong_shape.py")]:
        (cands / f"1_Scale_Add_ReLU__{tag}.py").write_text((fixtures / src).read_text())
    return tmp_path / "problems", tmp_path / "cands"


def _command(problems: Path, cands: Path, runs: Path, run_timeout: float) -> list[str]:
    return [sys.executable, "-m", "kbench_lib.cli", "run", str(problems), "--model", f"folder:{cands}", "--run-id", "killed",
            "--runs-root", str(runs), "--device", "cpu", "--no-timing", "--run-timeout", str(run_timeout),
            "--idle-timeout", "0", "--quiet"]  # the hanging candidate must still be running when the judge is killed


@pytest.mark.parametrize("lanes", ["thread", "process"])
def test_a_killed_batch_loses_no_record_and_leaves_nothing_behind(fixtures, tmp_path, lanes):
    """``lanes``: the batch's lane judged in the batch's process, or in a lane process of its own
    (kbench_lib.batch.lane_process, as each GPU's of a batch over several GPUs), which must die with it."""
    problems, cands = _layout(tmp_path, fixtures)
    runs, private_tmp = tmp_path / "runs", tmp_path / "tmp"
    private_tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(private_tmp), "PYTHONPATH": str(REPO), "KBENCH_LANE_PROCESSES": "1" if lanes == "process" else "0"}
    judge = subprocess.Popen(_command(problems, cands, runs, 120), env=env, cwd=REPO, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    seen: set[int] = set()
    try:  # wait until the hanging candidate runs (the others are judged first: folder order a, b, c)
        while time.monotonic() < deadline:
            seen |= _descendants(judge.pid)
            if (runs / "killed" / "records").is_dir() and len(read_records(runs, "killed")) >= 2:
                time.sleep(2.0)  # the hanging candidate's worker is up by now
                seen |= _descendants(judge.pid)
                break
            time.sleep(0.2)
        else:
            pytest.fail("the batch never recorded two verdicts: " + judge.stderr.read().decode()[-2000:] if judge.poll() is not None else "")
        before = read_records(runs, "killed")
        os.kill(judge.pid, signal.SIGKILL)  # the judge alone: its children must not outlive it
        judge.wait(timeout=30)
    finally:
        if judge.poll() is None:
            os.killpg(judge.pid, signal.SIGKILL)
    end = time.monotonic() + 30
    while time.monotonic() < end and any(_alive(p) for p in seen):
        time.sleep(0.5)
    left = sorted(p for p in seen if _alive(p))
    assert not left, f"processes outlived the killed judge: {left}"
    assert len(before) >= 2 and len(read_records(runs, "killed")) == len(before)  # every finished record is intact

    # the resumed run judges only what is missing, and afterwards nothing of either run is left
    done = subprocess.run(_command(problems, cands, runs, 5), env=env, cwd=REPO, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    df = read_records(runs, "killed")
    assert len(df) == 4 and df["sample"].is_unique if "sample" in df else len(df) == 4
    assert sorted(df["failure"].fillna("none")) == sorted(["output_mismatch", "runtime_error", "timeout", "shape_mismatch"])
    assert not [n for n in os.listdir(private_tmp) if n.startswith("kbench-")]
    if os.path.isdir("/dev/shm"):  # job folders carry the pid of the judging process (the batch's, or its lane process's)
        assert not [n for n in os.listdir("/dev/shm") for pid in {judge.pid, *seen} if n.startswith(f"kbench-job-{pid}-")]
