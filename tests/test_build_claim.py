"""Torch's build lock left by a killed process (kbench_lib.core.build_claim): cleared before the next
build or worker of the same source when no other process uses the folder, left alone while one
does; an honest candidate whose first build was killed builds and passes the next time; a build
beside another of the same source waits for its result or for the folder alone, so that a build
hanging idle is ended for it on both sides."""
import os
import threading
import time

from kbench_lib.judging import build
from kbench_lib.core.build_claim import BuildClaim
from kbench_lib.core.candidates import Candidate
from kbench_lib.judging.pipeline import JudgeOptions, build_candidate, judge


def _stale_lock(folder, ext="kb_ext"):
    (folder / ext).mkdir(parents=True, exist_ok=True)
    lock = folder / ext / "lock"
    lock.write_text("")
    return lock


def test_a_claim_clears_a_dead_processs_lock_and_no_live_ones(tmp_path):
    lock = _stale_lock(tmp_path)
    with BuildClaim(tmp_path) as held:  # nobody else: the lock can only be a dead process's
        assert not lock.exists() and held.cleared == [str(lock)]
        lock.write_text("")  # this claim's own process takes torch's lock now
        other = BuildClaim(tmp_path)  # a second judge's process while the first is live
        assert lock.exists() and other.cleared == []
        other.release()
    with BuildClaim(tmp_path):
        assert not lock.exists()


def test_a_claim_removes_links_and_never_what_they_point_to(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "lock").write_text("keep")
    folder = tmp_path / "build"
    folder.mkdir()
    os.symlink(outside, folder / "linked_ext")  # a candidate may write links into its build folder
    (folder / "ext").mkdir()
    os.symlink(outside / "lock", folder / "ext" / "lock")
    with BuildClaim(folder) as held:
        assert held.cleared == [str(folder / "ext" / "lock")]
    assert (outside / "lock").read_text() == "keep" and not os.path.lexists(folder / "ext" / "lock")


def test_shared_claims_never_wait_for_each_other(tmp_path):
    first = BuildClaim(tmp_path)
    done = threading.Event()
    t = threading.Thread(target=lambda: (BuildClaim(tmp_path).release(), done.set()))
    t.start()
    t.join(30)
    assert done.is_set()
    first.release()


def test_an_honest_candidate_whose_build_was_killed_builds_and_passes_the_next_time(scale_add_relu, fixtures, fast_cpu_opts,
                                                                                    tmp_path, monkeypatch):
    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    src = (fixtures / "candidates" / "scale_add_relu_cpp.py").read_text()
    c = Candidate(source=src + "\n# killed-build probe\n", backend="cpp")
    # a limit under the time the build process takes to import torch: killed mid-way, every time (the
    # source builds in about a second once started)
    cut = build_candidate(c, "cpu", JudgeOptions(device="cpu", build_timeout_s=1))
    assert cut.failure == "compile_error" and "1 s limit" in cut.message, cut
    if not list(build.build_dir(c, "cpu").glob("*/lock")):
        # killed before torch took its lock (a loaded machine starts the build slowly): the lock it
        # takes first, which a build killed a moment later leaves behind
        _stale_lock(build.build_dir(c, "cpu"), "kb_scale_add_relu")
    again = build_candidate(c, "cpu", JudgeOptions(device="cpu", build_timeout_s=240))
    assert again.failure is None, again.message
    for ext in build.build_dir(c, "cpu").iterdir():  # a worker killed during its import would leave one too
        if ext.is_dir():
            _stale_lock(build.build_dir(c, "cpu"), ext.name)
    fast_cpu_opts.idle_timeout_s = 5
    v = judge(scale_add_relu, c, fast_cpu_opts)
    assert v.correct and v.failure is None, v.message


def test_a_claim_beside_another_waits_until_it_is_alone_or_the_other_is_settled(tmp_path):
    first = BuildClaim(tmp_path)
    second = BuildClaim(tmp_path)
    assert first.alone and not second.alone
    threading.Timer(0.5, first.release).start()
    t0 = time.monotonic()
    assert second.wait_alone(lambda: False, timeout_s=30) and second.alone
    assert time.monotonic() - t0 < 20
    third = BuildClaim(tmp_path)  # beside the second, which now builds alone
    settled = threading.Event()
    threading.Timer(0.3, settled.set).start()
    assert not third.wait_alone(settled.is_set, timeout_s=30) and not third.alone  # the other's result came first
    assert not BuildClaim(tmp_path).wait_alone(lambda: False, timeout_s=0.5)  # in time, neither: built beside it as before
    for c in (second, third):
        c.release()


def test_two_waiting_claims_never_hold_each_other_off(tmp_path):
    first = BuildClaim(tmp_path)
    waiters = [BuildClaim(tmp_path) for _ in range(2)]
    alone = []

    def wait(c):
        if c.wait_alone(lambda: False, timeout_s=60):
            alone.append(c)
            time.sleep(0.3)
            c.release()  # its build done: the other waiter's turn

    threads = [threading.Thread(target=wait, args=(c,)) for c in waiters]
    for t in threads:
        t.start()
    time.sleep(0.5)
    first.release()
    for t in threads:
        t.join(60)
    assert sorted(map(id, alone)) == sorted(map(id, waiters))


def test_two_builds_of_a_source_that_hangs_idle_are_both_ended_for_it(fixtures, tmp_path, monkeypatch):
    """Two samples of one source built at once (two GPUs, two Ray nodes): the second used to build
    beside the first without the idle limit and ran to its whole build limit."""
    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    c = Candidate(source=(fixtures / "bad_candidates" / "build_hang.py").read_text(), backend="cpp")
    opts = JudgeOptions(device="cpu", build_timeout_s=240, idle_timeout_s=3)
    results = []
    threads = [threading.Thread(target=lambda: results.append(build_candidate(c, "cpu", opts))) for _ in range(2)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
        time.sleep(0.5)
    for t in threads:
        t.join(240)
    assert len(results) == 2 and time.monotonic() - t0 < 120
    assert all(r.failure == "compile_error" and "sat idle" in r.message for r in results), [r.message for r in results]
