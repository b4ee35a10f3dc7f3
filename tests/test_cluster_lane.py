"""A judging actor's lane (kbench_lib.cluster.lane), without Ray: the local runner's lane loop fed
jobs under tokens; its verdicts stay until the driver acknowledges them, so a reply lost on its
way is sent again."""
import time

import pytest

from kbench_lib.cluster.lane import ActorLane, LaneStopped
from kbench_lib.core.candidates import load_candidate
from kbench_lib.generation.samples import Sample
from kbench_lib.judging.build_job import BuildResult
from kbench_lib.judging.pipeline import JudgeOptions
from kbench_lib.suite.problems import load_problem

pytestmark = pytest.mark.slow


def _collect(lane: ActorLane, tokens: set, acknowledged: list, within: float = 180.0) -> dict:
    got: dict = {}
    deadline = time.monotonic() + within
    while set(got) != tokens and time.monotonic() < deadline:
        for token, verdict in lane.verdicts(acknowledged, 1.0):
            got[token] = verdict
    return got


def test_a_lanes_verdicts_are_kept_until_acknowledged_and_a_model_failure_needs_no_judging(fixtures):
    problem = load_problem(fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    good = Sample(0, load_candidate(fixtures / "candidates" / "scale_add_relu_cpp.py"))
    wrong = Sample(1, load_candidate(fixtures / "candidates" / "scale_add_relu_wrong.py"))
    lane = ActorLane(JudgeOptions(device="cpu", timing=False, run_timeout_s=60), "cpu")
    try:
        lane.put([(1, problem, good, None, False), (2, problem, wrong, None, True),
                  (3, problem, None, "model m failed to produce a candidate: server down", True)])
        got = _collect(lane, {1, 2, 3}, [])
        assert got[1].correct and got[1].failure is None
        assert not got[2].correct and got[2].failure == "output_mismatch"
        assert got[3].failure == "load_error" and "server down" in got[3].message
        again = dict(lane.verdicts([], 0.1))  # none acknowledged: all sent again
        assert set(again) == {1, 2, 3}
        assert lane.verdicts([1, 2, 3], 0.1) == []  # acknowledged: gone
    finally:
        lane.close()
    assert not lane.thread.is_alive() and lane.verdicts([], 5.0) == []  # closed: nothing, at once


def test_a_job_taken_back_out_of_the_line_is_never_judged_there(fixtures):
    problem = load_problem(fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    good = load_candidate(fixtures / "candidates" / "scale_add_relu_cpp.py")
    lane = ActorLane(JudgeOptions(device="cpu", timing=False, run_timeout_s=60), "cpu")
    try:
        # four jobs at once: the lane takes the first (and may begin the second behind it), the last
        # two wait in its line for seconds (a worker's start and a correctness check each)
        lane.put([(t, problem, Sample(t, good), None, t == 4) for t in (1, 2, 3, 4)])
        assert lane.take_back() == [4]
        got = _collect(lane, {1, 2, 3}, [])
        assert set(got) == {1, 2, 3} and all(v.correct for v in got.values())
    finally:
        lane.close()
    assert 4 not in dict(lane.verdicts([], 0.5))  # closed with every job judged: the one taken back never was


def test_a_lane_whose_loop_fails_says_so_once_its_verdicts_are_handed_over(fixtures):
    problem = load_problem(fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    lane = ActorLane(JudgeOptions(device="cpu", timing=False, run_timeout_s=60), "cpu")
    lane.put([(7, problem, None, "model m failed to produce a candidate: server down", True)])
    lane.batch.failed = RuntimeError("recording failed")  # the loop ends as a failed batch's does
    lane.batch.lanes.abort(lane.batch.failed)
    lane.thread.join(30)
    assert [t for t, _ in lane.verdicts([], 1.0)] == [7]  # what it made is still handed over
    with pytest.raises(LaneStopped, match="recording failed"):
        lane.verdicts([7], 1.0)


_THREADS = """
import os, sys
from kbench_lib.cluster.actors import undo_ray_thread_default
os.environ.setdefault("OMP_NUM_THREADS", "1")  # as Ray sets it in an actor where unset, after the process started
import torch
torch.set_num_threads(1)
print(undo_ray_thread_default(), os.environ.get("OMP_NUM_THREADS"), torch.get_num_threads())
"""


@pytest.mark.parametrize("node_env, expected", [
    (None, "True None {cores}"),  # set after the start (Ray's): taken back, torch on every core
    ("3", "False 3 1"),  # in the starting environment (the node's own): kept
])
def test_a_judge_takes_back_rays_one_thread_but_keeps_a_nodes_own(node_env, expected):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    if node_env is not None:
        env["OMP_NUM_THREADS"] = node_env
    out = subprocess.run([sys.executable, "-c", _THREADS], env=env, capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == expected.format(cores=len(os.sched_getaffinity(0))).split(), out.stderr[-2000:]


_SHARE = """
from kbench_lib.cluster import lane
from kbench_lib.core import cpu_sets
import torch
torch.set_num_threads(2)
cpu_sets.host_share = lambda device: (0,) if device == "cuda:0" else None  # one core of a host of several GPUs
print(lane.judge_share("cpu"), torch.get_num_threads(), lane.judge_share("cuda:0"), torch.get_num_threads())
"""


def test_a_judge_on_one_gpu_of_several_sizes_its_torch_threads_to_that_gpus_share():
    """The judge's own torch (preparing references) keeps to as many threads as its GPU's share
    has cores; a judge with every core (a CPU judge, a host of one GPU) keeps torch as it is."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _SHARE], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["None", "2", "(0,)", "1"], out.stderr[-2000:]


def test_a_build_that_failed_on_the_node_is_the_verdict_and_is_not_built_again(fixtures):
    """The build task on the judge's node failed in a way the build cache does not remember (its
    time limit): the driver sends that failure with the job, and the lane records it at once, where
    building it again would take the limit a second time (this source's build never ends)."""
    problem = load_problem(fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    hangs = Sample(0, load_candidate(fixtures / "bad_candidates" / "build_hang.py"))
    lane = ActorLane(JudgeOptions(device="cpu", timing=False, run_timeout_s=60, build_timeout_s=120), "cpu")
    failed = BuildResult(failure="compile_error", message="build exceeded the 4 s limit", seconds=4.0)
    try:
        t0 = time.monotonic()
        lane.put([(1, problem, hangs, None, True, failed)])
        got = _collect(lane, {1}, [], within=60)
        v = got[1]
        assert v.failure == "compile_error" and v.message == "build exceeded the 4 s limit" and v.build_s == 4.0
        assert time.monotonic() - t0 < 30  # not built again: that would sit idle for 10 s, or hang to 120 s
    finally:
        lane.close()
