"""Batches on a Ray cluster (kbench_lib.cluster): a two-node Ray cluster on this machine (head and a
second node, each its own raylet, as ray start would make them) judges C++ and interpreted-Triton
candidates with one CPU judge per node. Its records equal a local run's; with the second node
killed mid-batch the batch still records every sample exactly once."""
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from kbench_lib.judging.pipeline import JudgeOptions
from kbench_lib.suite.problems import discover
from kbench_lib.scoring.records import read_records
from kbench_lib.batch.runner import run_batch

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

CANDIDATES = {  # file under tests/fixtures -> sample tag
    "candidates/scale_add_relu_cpp.py": "cpp",
    "candidates/scale_add_relu_triton.py": "triton",
    "candidates/scale_add_relu_wrong.py": "wrong",
    "bad_candidates/segfault.py": "segfault",  # kills its own process: a crash verdict, never a retry
    "bad_candidates/raises.py": "raises",
    "bad_candidates/wrong_shape.py": "shape",
}
COMPARED = ["problem", "sample", "backend", "compiled", "correct", "failure", "problem_path", "candidate_source"]
OPTS = JudgeOptions(device="cpu", timing=False, run_timeout_s=60)  # verdicts, not CPU timings, are compared


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Two problems (the fixture problem and a copy under another name), six candidates each."""
    fixtures = Path(__file__).parent / "fixtures"
    root = tmp_path_factory.mktemp("ray-batch")
    probs, cands = root / "problems" / "level1", root / "cands"
    probs.mkdir(parents=True)
    cands.mkdir()
    for stem in ("1_Scale_Add_ReLU", "2_Scale_Add_ReLU_Copy"):
        shutil.copy(fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py", probs / f"{stem}.py")
        for src, tag in CANDIDATES.items():
            shutil.copy(fixtures / src, cands / f"{stem}__{tag}.py")
    return discover(root / "problems"), f"folder:{cands}"


@pytest.fixture(scope="module")
def local(batch, tmp_path_factory):
    """The same batch judged locally (also fills the build cache the cluster's nodes share here)."""
    root = tmp_path_factory.mktemp("local-runs")
    run_batch(*batch, run_id="local", runs_root=root, opts=OPTS, progress=False)
    return _compared(read_records(root, "local"))


@pytest.fixture(scope="module")
def cluster(build_cache):
    """A head node and a second node, two CPUs each, on 127.0.0.1; node deaths noticed within ~2 s."""
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    # everything on the loopback interface: Ray would otherwise turn 127.0.0.1 in an address into
    # this machine's outward address, where these nodes do not listen
    ray_constants.ENABLE_RAY_CLUSTER = False
    system = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500, "health_check_failure_threshold": 3}
    c, second = _started(lambda: Cluster(initialize_head=True, head_node_args={
        "num_cpus": 2, "node_ip_address": "127.0.0.1", "include_dashboard": False, "_system_config": system}))
    ray.init(address=c.address, namespace="kbench-test", log_to_driver=False, _node_ip_address="127.0.0.1")
    yield c, second
    ray.shutdown()
    c.shutdown()


def _started(make, attempts: int = 3):
    """(cluster, its second node), started again where Ray gave up on a node's start: Ray waits a
    fixed 30 s for a raylet to register, which a loaded machine can outlast; what the tests check
    is kbench on a cluster, not how fast Ray starts."""
    for attempt in range(attempts):
        c = None
        try:
            c = make()
            return c, c.add_node(num_cpus=2, node_ip_address="127.0.0.1")
        except Exception as e:  # noqa: BLE001 - Ray raises a bare Exception for a node's start
            if c is not None:
                c.shutdown()
            if "timed out during startup" not in str(e) or attempt == attempts - 1:
                raise


def _compared(df):
    return df[COMPARED].sort_values(["problem", "sample"]).reset_index(drop=True)


def _keys(df):
    return list(zip(df["model"], df["problem"], df["sample"]))


def test_records_on_ray_equal_a_local_run(cluster, batch, local, tmp_path):
    c, _ = cluster
    run_id, rows = run_batch(*batch, run_id="on-ray", runs_root=tmp_path, opts=OPTS, progress=False, ray=c.address)
    df = read_records(tmp_path, run_id)
    assert len(rows) == len(df) == 12 and len(set(_keys(df))) == 12
    assert _compared(df).equals(local)
    assert set(df.loc[df["correct"], "backend"]) == {"cpp", "triton"}
    assert (df["failure"] == "crash").sum() == 2  # the two segfaults, judged once each
    # resuming the same run judges nothing again
    _, again = run_batch(*batch, run_id="on-ray", runs_root=tmp_path, opts=OPTS, progress=False, ray=c.address)
    assert again == [] and len(read_records(tmp_path, run_id)) == 12


@pytest.mark.timeout(360)
def test_judges_holding_every_cpu_still_get_their_builds(cluster, batch, local, tmp_path):
    """Four CPU judges on two nodes of two CPUs each hold every CPU Ray can hand out. Builds reserve
    none (the driver bounds them per node), so they still run; when a build asked for a CPU, this
    batch waited forever, as a batch did whenever a lost node's replacement judge took the last
    free CPU of a survivor. The four judges start together, each importing torch: beside the
    notebooks on CI's two busy cores none was ready within 60 s once (2026-11-27), so the batch
    may wait 180 s for a first judge; a deadlock still fails it.

    Whether a build task came back within the batch is not asserted: a judge's first jobs go
    before their builds, and four judges three jobs deep take all twelve at once, so the lanes may
    judge everything before any task returns (CI, 2026-11-29). A task with a build's options is
    instead run while actors hold every CPU of both nodes.

    Each judge asks Ray for one CPU, so Ray sets its OMP_NUM_THREADS to 1; the judge takes that back."""
    from kbench_lib.cluster import connect, run_batch_on_ray

    events: list = []
    run_id, rows = run_batch_on_ray(*batch, run_id="every-cpu", runs_root=tmp_path, opts=OPTS, progress=False, judges=4,
                                    recover_timeout_s=180, events=events)
    df = read_records(tmp_path, run_id)
    assert len(rows) == len(df) == 12 and _compared(df).equals(local)
    ready = [e for e in events if e["event"] == "judge_ready"]
    nodes = {e["node"] for e in ready}
    assert len(nodes) == 2
    # Ray's OMP_NUM_THREADS=1 for a one-CPU actor taken back: torch in each judge on every core it may
    # use, as in a local lane (the judges run on this machine)
    import os

    assert [e["threads"] for e in ready] == [len(os.sched_getaffinity(0))] * len(ready)

    @ray.remote(num_cpus=1)
    class CpuHolder:  # defined here, so Ray sends it by value (workers cannot import this module)
        def ready(self) -> bool:
            return True

    def a_build_task() -> str:
        return ray.get_runtime_context().get_node_id()

    holders = [CpuHolder.remote() for _ in range(4)]
    ray.get([h.ready.remote() for h in holders], timeout=120)
    assert ray.cluster_resources().get("CPU") == 4  # so the four holders hold them all
    try:
        done = [ray.remote(a_build_task).options(**connect.build_options("cpu", node, None)).remote() for node in nodes]
        assert sorted(ray.get(done, timeout=120)) == sorted(nodes)
    finally:
        for h in holders:
            ray.kill(h)
        _wait_for_free_cpus(4)  # a kill is asynchronous: the next test's judges would find the CPUs held


SLOW = """
import time
import torch
import torch.nn as nn


class ModelNew(nn.Module):  # right, and slow to make (busy: a sleeping candidate is caught idle), so a job waits
    def __init__(self, scale: float):  # long in a judge's line
        super().__init__()
        self.scale = scale
        start = time.perf_counter()
        while time.perf_counter() - start < 1.0:
            pass

    def forward(self, a, b):
        return torch.relu(a * self.scale + b)
"""


@pytest.mark.timeout(360)
def test_a_judge_left_with_nothing_takes_a_job_waiting_in_anothers_line(cluster, tmp_path):
    """Three slow samples of one problem: the judge that takes the problem is sent all three at
    once (its first jobs), so the other judge, once ready, has nothing to take from a share or the
    queue. It takes the job still waiting in the first judge's line (and, if it is done with that
    before the first judge began its second, that one too); each is recorded once, by the judge that
    took it."""
    from kbench_lib.cluster import run_batch_on_ray

    fixtures = Path(__file__).parent / "fixtures"
    probs, cands = tmp_path / "problems" / "level1", tmp_path / "cands"
    probs.mkdir(parents=True)
    cands.mkdir()
    shutil.copy(fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py", probs / "1_Scale_Add_ReLU.py")
    for i in range(3):
        (cands / f"1_Scale_Add_ReLU__slow{i}.py").write_text(SLOW)
    events: list = []
    run_id, rows = run_batch_on_ray(discover(tmp_path / "problems"), f"folder:{cands}", run_id="taken", runs_root=tmp_path / "runs",
                                    opts=OPTS, progress=False, judges=2, recover_timeout_s=180, events=events)
    df = read_records(tmp_path / "runs", run_id)
    assert len(rows) == len(df) == 3 and len(set(_keys(df))) == 3
    assert df["correct"].all(), df[["failure", "message"]].to_dict("records")
    taken = [e for e in events if e["event"] == "taken_back"]  # one, or two where the taker ran dry again first
    assert 1 <= len(taken) <= 2 and all(len(e["keys"]) == 1 for e in taken), [(e["event"], e.get("judge")) for e in events]
    for e in taken:
        recorded = [r for r in events if r["event"] == "recorded" and r["key"] == e["keys"][0]]
        assert len(recorded) == 1 and recorded[0]["judge"] != e["judge"]


def _wait_for_free_cpus(n: int, within_s: float = 60.0) -> None:
    deadline = time.monotonic() + within_s
    while ray.available_resources().get("CPU", 0) < n and time.monotonic() < deadline:
        time.sleep(0.2)


def _kill_second_node_with_work_in_flight(c, node, events, killed: list) -> None:
    """Kills the node while it holds a job not yet judged, so that the loss is certain to be seen
    at once (not whenever work is next sent there). Waiting for a first verdict of its own as well
    raced with the other node: with warm build caches, it judged the whole batch first. It waits
    longer than the first verdict may hold the driver for the second node's judge (``HOLD_S``): it
    waited 120 s, shorter than that hold, and in one CI run on two busy cores (2026-11-28) the second
    node was never killed (why is not recorded; a judge still starting after 120 s fits)."""
    deadline = time.monotonic() + HOLD_S + 60
    while time.monotonic() < deadline:
        seen = list(events)
        there = {e["judge"] for e in seen if e["event"] == "judge_ready" and e["node"] == node.node_id}
        recorded = {tuple(e["key"]) for e in seen if e["event"] == "recorded"}
        in_flight = [e for e in seen if e["event"] == "dispatched" and e["judge"] in there and tuple(e["key"]) not in recorded]
        if in_flight:
            killed.append(time.time())
            c.remove_node(node, allow_graceful=False)
            return
        time.sleep(0.05)


def _judge_alive_on(node_id: str) -> bool:
    """Whether a judging actor on ``node_id`` has been created (its process up, torch imported):
    Ray's actor table, which needs no dashboard."""
    from ray._private import state

    for a in state.actors().values():
        where = (a.get("Address") or {}).get("NodeID")
        if a.get("State") == "ALIVE" and where == node_id and "JudgeActor" in str(a.get("ActorClassName", "")):
            return True
    return False


HOLD_S = 240.0  # the longest the first verdict holds the driver for the second node's judge


class _HeldAtFirstVerdict(list):
    """The batch's events; the first verdict recorded holds the driver (its append) until the second
    node's judge exists, so that the other judge cannot judge the whole batch before the second is
    ready: on CI's two busy cores that happened twice (2026-11-27), and the node was never lost.
    The first judge meanwhile finishes what it was sent (two jobs); the rest of its share waits,
    half of it for the second judge."""

    def __init__(self, node_id: str, limit_s: float = HOLD_S):
        super().__init__()
        self.node_id, self.limit_s, self.held = node_id, limit_s, False

    def append(self, e) -> None:
        super().append(e)
        if e.get("event") == "recorded" and not self.held:
            self.held = True
            deadline = time.monotonic() + self.limit_s
            while time.monotonic() < deadline and not self._second_judge_came():
                time.sleep(0.1)

    def _second_judge_came(self) -> bool:
        """Its judge was ready (it may be dead already: the node lost), or it exists now."""
        return any(e.get("event") == "judge_ready" and e.get("node") == self.node_id for e in list(self)) or _judge_alive_on(self.node_id)


def test_a_node_lost_mid_batch_loses_and_duplicates_nothing(cluster, batch, local, tmp_path):
    from kbench_lib.cluster import run_batch_on_ray

    c, second = cluster
    events, killed = _HeldAtFirstVerdict(second.node_id), []
    killer = threading.Thread(target=_kill_second_node_with_work_in_flight, args=(c, second, events, killed))
    killer.start()
    # timed (still not compared): one judge alone could otherwise judge all twelve before the second
    # node's judge was ready (seen once in CI on two cores, 2026-11-27), and the node would never be lost
    opts = replace(OPTS, timing=True, timing_budget_s=0.5)
    run_id, rows = run_batch_on_ray(*batch, run_id="node-lost", runs_root=tmp_path, opts=opts, progress=False, judges=2,
                                    recover_timeout_s=60, events=events)
    killer.join()
    assert killed, ("the second node never received work, so it was not killed; the batch's events (t, event, judge, node):\n"
                    + "\n".join(f"{e.get('t', 0):.2f} {e.get('event')} {e.get('judge')} {str(e.get('node'))[:8]} {e.get('key', '')}"
                                 for e in events))
    died = [e for e in events if e["event"] == "judge_died"]
    assert len(died) == 1 and died[0]["node"] == second.node_id and died[0]["requeued"] >= 1
    df = read_records(tmp_path, run_id)
    assert len(rows) == len(df) == 12 and len(set(_keys(df))) == 12
    assert _compared(df).equals(local)
    requeued = {tuple(k) for k in died[0]["running"]}
    after = [e for e in events if e["event"] == "recorded" and e["t"] > died[0]["t"]]
    assert after and all(e["node"] != second.node_id for e in after)
    assert requeued <= {tuple(e["key"]) for e in after}
