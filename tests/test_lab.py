"""The kernel lab's %%kbench cell magic, through IPython's own shell, on the CPU."""
from __future__ import annotations

import pytest

from conftest import FIXTURES

PROBLEM = str(FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py")
HONEST = (FIXTURES / "candidates" / "scale_add_relu_torch.py").read_text()
WRONG = (FIXTURES / "candidates" / "scale_add_relu_wrong.py").read_text()
# a C++ kernel (the cpp backend, built in about a second): trusted, where the plain-PyTorch HONEST is a passthrough
KERNEL = (FIXTURES.parent / "adversarial" / "legit" / "elementwise_cpp.py").read_text()


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "kbench_lib.lab")
    return ip, tmp_path_factory.mktemp("lab")


def _cell(shell, source: str, options: str = "", capsys=None):
    ip, root = shell
    return ip.run_cell_magic("kbench", f"{PROBLEM} --device cpu --no-timing --runs-root {root} --run-id lab {options}", source)


def test_a_correct_cell_returns_the_eval_json_keys_and_is_recorded(shell):
    from kbench_lib.scoring.records import read_records

    d = _cell(shell, HONEST)
    assert d["correct"] and d["failure"] is None and d["protocol"] == "kbench"
    assert {"problem", "correct", "failure", "flags", "runtime_ms", "baseline_ms", "speedup", "max_abs_err", "seeds_checked",
            "variants_checked", "configs"} <= set(d)
    assert all(c["passed"] for c in d["configs"] if not c["follows"]) and d["variants_checked"] == 2
    wrong = _cell(shell, WRONG)
    assert not wrong["correct"] and wrong["failure"] == "output_mismatch" and wrong["attempt"] == d["attempt"] + 1
    df = read_records(shell[1], "lab").sort_values("sample")
    assert list(df["model"].unique()) == ["lab"] and df["candidate_source"].iloc[-1] == WRONG


def test_crashing_and_hanging_cells_end_as_their_category_and_the_shell_lives(shell):
    crash = HONEST.replace("return torch.relu(a * self.scale + b)", "import os; os._exit(3)")
    assert _cell(shell, crash)["failure"] == "crash"
    hang = HONEST.replace("return torch.relu(a * self.scale + b)", "import time; time.sleep(600)")
    d = _cell(shell, hang, "--idle-timeout 3")
    assert d["failure"] == "timeout" and "idle" in d["message"]
    syntax = _cell(shell, "class ModelNew(:\n")
    assert syntax["failure"] == "load_error" and "Traceback" not in (syntax["message"] or "")
    none = _cell(shell, "import torch\nx = 1\n")
    assert none["failure"] == "load_error" and "ModelNew" in none["message"]
    assert shell[0].run_cell("1 + 1").result == 2


def test_bad_lines_are_one_line_errors_that_stop_the_cell(shell):
    """Each raises IPython's UsageError (shown as its one line, no traceback): the cell fails, so
    papermill and nbval stop, and ``_`` is not left on an earlier verdict."""
    from IPython.core.error import UsageError

    ip, root = shell
    cases = [("level9/no_such_problem --device cpu", HONEST), (f"{PROBLEM} --protocol upstream", HONEST),
             (f"{PROBLEM} --devise cpu", HONEST), (f"{PROBLEM}", "   \n"),
             ("level9/no_such_problem --background", HONEST),  # before any thread starts
             (f"{PROBLEM} --device cuda --runs-root {root}", HONEST)]  # no GPU here: the judge cannot run
    ip.run_cell("7 * 6", store_history=True)
    errors = []
    for line, source in cases:
        r = ip.run_cell(f"%%kbench {line}\n{source}", store_history=True)
        assert isinstance(r.error_in_exec, UsageError), (line, r.error_in_exec)
        errors.append(str(r.error_in_exec))
        assert ip.user_ns["_"] == 42  # the last value shown is still the last good one, never an older verdict
    assert all(e.startswith("%%kbench: ") and "\n" not in e for e in errors), errors
    assert "no problem 'level9/no_such_problem'" in errors[0] and "choose one of kbench" in errors[1] and "--devise" in errors[2]
    assert "no problem 'level9/no_such_problem'" in errors[4] and errors[5].startswith("%%kbench: the judge could not run: ")


def test_the_rendered_verdict_shows_each_configuration():
    from kbench_lib.judging.config_checks import new_config
    from kbench_lib.lab import render

    d = {"problem": "level1/x", "correct": False, "failure": "runtime_error", "cause": "shape_specialisation", "protocol": "kbench",
         "message": "[v0] <boom>", "flags": [], "configs": [{**new_config("default", "default"), "checked": True, "passed": True,
                                                             "tol_needed": 1e-7}, {**new_config("v0", "declared"), "checked": True, "failure": "runtime_error"}],
         "runtime_ms": 0.5, "baseline_ms": 1.0, "speedup": 2.0, "timing": "gpu", "sol_ms": 0.25, "attempt": 3, "run_id": "lab"}
    page = render(d)
    assert "FAILED (runtime_error)" in page and "cause: <b>shape_specialisation</b>" in page and "&lt;boom&gt;" in page
    assert "<td>default</td><td>default</td><td>passed</td><td>1e-07</td>" in page and "<td>v0</td><td>declared</td><td>runtime_error</td>" in page
    assert "<b>2x</b> over eager" in page and "50% of the speed of light" in page


def test_the_history_lists_attempts_diffs_them_and_saves_one_for_the_folder_model(shell, tmp_path):
    from kbench_lib.reports import lab_history
    from kbench_lib.generation.models import folder_model
    from kbench_lib.suite.problems import load_problem

    ip, root = shell
    ip.run_cell_magic("kbench", f"{PROBLEM} --device cpu --no-timing --runs-root {root} --run-id hist", WRONG)
    ip.run_cell_magic("kbench", f"{PROBLEM} --device cpu --no-timing --runs-root {root} --run-id hist", KERNEL)
    df = lab_history.attempts("hist", root)
    assert list(df["attempt"]) == [0, 1] and list(df["correct"]) == [False, True]
    assert int(lab_history.best(df)["attempt"]) == 1
    text = lab_history.diff(df, 0, 1)
    assert text.startswith("--- attempt 0\n+++ attempt 1") and "+        return _scale_add_relu(a, b, self.scale)" in text
    path = lab_history.save(df, 1, tmp_path / "solutions")
    assert path.name == "1_Scale_Add_ReLU__lab1.py" and path.read_text() == KERNEL
    samples = folder_model(tmp_path / "solutions")(load_problem(PROBLEM))
    assert [s.candidate.source for s in samples] == [KERNEL]
    view = lab_history.History("hist", root, save_to=tmp_path / "saved")
    assert "best trusted attempt: 1" in view.table.value and "attempt 0" in view.diff_view.value
    view.b.value = 0
    view.save_button.click()
    assert (tmp_path / "saved" / "1_Scale_Add_ReLU__lab0.py").read_text() == WRONG and "saved attempt 0" in view.status.value
    empty = lab_history.History("none-yet", root)
    assert "no attempt" in empty.table.value and empty.save_button.disabled


def test_the_notebooks_line_and_baselines_come_from_the_lab(shell):
    from kbench_lib import lab
    from kbench_lib.suite.problems import load_problem

    p = load_problem(PROBLEM)
    line = lab.options_line(p, "cpu", "kernelbench", "r1", "/tmp/x y", timing=False, timing_budget_s=0.5)
    a = lab.parser().parse_args(__import__("shlex").split(line))
    assert (a.problem, a.device, a.protocol, a.run_id, a.runs_root, a.no_timing, a.timing_budget) == (
        PROBLEM, "cpu", "kernelbench", "r1", "/tmp/x y", True, 0.5)
    relu = lab.stored_baselines(lab.problem_of("level1/51_ReLU"))
    assert set(relu["mode"]) >= {"eager", "compile"} and (relu["sol_ms"] > 0).all()


SLOW = "import time\ntime.sleep(3)  # a slow import: the worker's load takes 3 s\n" + HONEST
HANG = HONEST.replace("return torch.relu(a * self.scale + b)", "import time; time.sleep(600)")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed but not yet reaped, does not)."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def _until(predicate, timeout: float = 60):
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_sync_cells_verdict_is_underscore(shell):
    ip, root = shell
    ip.run_cell(f"%%kbench {PROBLEM} --device cpu --no-timing --runs-root {root} --run-id sync\n{HONEST}", store_history=True)
    ip.run_cell("v = _", store_history=True)
    v = ip.user_ns["v"]
    assert isinstance(v, dict) and v["correct"] and v["run_id"] == "sync"
    assert __import__("IPython").lib.pretty.pretty(v) == f"<kbench verdict of level1/1_Scale_Add_ReLU: CORRECT, attempt 0 of run sync; a dict of {len(v)} keys>"


def test_a_background_judgement_lets_a_second_cell_run_then_shows_its_verdict(shell):
    import time

    from kbench_lib.lab import STAGES, LabJudgement
    from kbench_lib.scoring.records import read_records

    ip, root = shell
    t0 = time.monotonic()
    ip.run_cell(f"%%kbench {PROBLEM} --device cpu --no-timing --runs-root {root} --run-id bg --background\n{SLOW}", store_history=True)
    ip.run_cell("h = _", store_history=True)
    h = ip.user_ns["h"]
    assert isinstance(h, LabJudgement) and time.monotonic() - t0 < 2 and not h.done and h.verdict is None
    assert ip.run_cell("second = 6 * 7").success and ip.user_ns["second"] == 42 and not h.done  # while it judges
    view = h.widget  # the progress bar and the stage, while it runs
    assert "judging level1/1_Scale_Add_ReLU" in view.children[0].children[1].value
    seen = set()
    _until(lambda: seen.add(h.stage) or h.done)
    assert "load" in seen and seen <= {*STAGES, "done"}
    d = h.result(timeout=60)
    assert d["correct"] and d["attempt"] == 0 and d["run_id"] == "bg" and h.verdict is d and h.stage == "done"
    assert len(read_records(root, "bg")) == 1 and not h.cancel()  # judged: too late to cancel, recorded whole
    _until(lambda: "CORRECT" in view.children[1].value, 5)  # the verdict, rendered in the same view
    assert view.children[0].children[1].value.startswith("judged in")


def test_cancel_ends_a_hanging_background_judgement_at_once_and_records_nothing(shell):
    import time

    from kbench_lib.lab import LabError

    ip, root = shell
    h = _cell(shell, HANG, "--run-id cancelled --background --idle-timeout 0")
    _until(lambda: h.stage == "correctness")
    pid = h._judgement.run._session()
    assert _alive(pid)
    t0 = time.monotonic()
    assert h.cancel() and h.done
    assert time.monotonic() - t0 < 5 and h.stage == "cancelled" and h.verdict is None
    _until(lambda: not _alive(pid), 5)
    assert not (root / "cancelled").exists() and "nothing was recorded" in h.summary()
    with pytest.raises(LabError, match="cancelled"):
        h.result()
    assert h.cancel() and ip.run_cell("1 + 1").result == 2


def test_an_interrupt_while_a_cell_waits_ends_the_judgement_and_records_nothing(shell, capsys):
    import os
    import signal
    import threading
    import time

    from kbench_lib import lab
    from kbench_lib.core.thread_stop import raise_in

    ip, root = shell
    sent, returned = [], threading.Event()
    # the stop button: a kernel turns SIGINT into a KeyboardInterrupt in the thread running the cell.
    # Here that is this thread; where it is not the main thread with Python's own SIGINT handler
    # (a pytest-xdist worker), the same KeyboardInterrupt is raised in it directly
    cell_thread = threading.get_ident()
    real_signal = threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler

    def stop_button():  # once the worker runs the hanging forward
        while not returned.is_set() and not sent:
            if any(h.stage == "correctness" for h in lab.running()):
                sent.append(time.monotonic())
                if real_signal:
                    os.kill(os.getpid(), signal.SIGINT)
                else:
                    raise_in(cell_thread, KeyboardInterrupt)
            time.sleep(0.05)

    button = threading.Thread(target=stop_button, daemon=True)
    button.start()
    from IPython.core.error import UsageError

    got = None
    try:
        got = _cell(shell, HANG, "--run-id interrupted --idle-timeout 0")
    except UsageError as e:
        error = str(e)
    finally:
        returned.set()  # never a SIGINT once the cell is over (it would land in another test)
        button.join()
    assert sent, f"the judgement never reached its correctness stage: {got and {k: got.get(k) for k in ('failure', 'message')}}"
    assert got is None, {k: got.get(k) for k in ("failure", "message", "judge_s")}
    assert time.monotonic() - sent[0] < 5 and lab.running() == []
    assert error.startswith("%%kbench: interrupted: the judgement was cancelled") and "\n" not in error, error
    assert not (root / "interrupted").exists()
    assert ip.run_cell("1 + 1").result == 2


def test_a_terminal_shows_the_verdict_as_text(shell):
    """The verdict is displayed with an HTML and a plain-text form: a terminal's IPython prints the
    text (status, flags with their class, the configurations), not ``<IPython.core.display.HTML object>``."""
    from kbench_lib.lab import render_text

    d = _cell(shell, HONEST, "--run-id text")
    text = render_text(d)
    assert text.startswith("CORRECT  ") and "protocol kbench" in text and "IPython" not in text
    assert "small: passed" in text and "small/eval: follows small" in text
    flagged = render_text({**d, "correct": True, "flags": ["static_output_buffer: 3 of 9 timed calls"]})
    assert "FLAG [hazard] static_output_buffer" in flagged
