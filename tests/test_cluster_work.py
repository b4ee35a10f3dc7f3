"""The driver's work rules on a Ray cluster (kbench_lib.cluster.work), without Ray."""
from collections import deque
from pathlib import Path

from kbench_lib.cluster.work import Job, WorkQueue, jobs_for
from kbench_lib.generation.models import Sample
from kbench_lib.suite.problems import Problem


def _problem(stem: str) -> Problem:
    return Problem(path=Path(f"/nowhere/{stem}.py"), source="", level="level1", number=1, name=stem, tags=(), task="forward",
                   variants=(), small={}, small_variants=())


def _jobs(stem: str, n: int) -> list[Job]:
    p = _problem(stem)
    return [Job(("m", p.key, i), p, Sample(i, None, "x")) for i in range(n)]


def test_jobs_leave_out_recorded_keys_and_record_a_model_failure_once():
    p = _problem("1_A")
    samples = [Sample(i, None, "x") for i in range(3)]
    jobs = jobs_for("m", p, samples, None, done={("m", "level1/1_A", 1)})
    assert [j.key[2] for j in jobs] == [0, 2]
    failed = jobs_for("m", p, [], "server down", done=set())
    assert len(failed) == 1 and failed[0].sample is None and failed[0].key == ("m", "level1/1_A", 0) and "server down" in failed[0].err


def test_a_judge_gets_whole_problems_then_takes_half_of_the_largest_share():
    q = WorkQueue(low_water=4)
    q.add(_jobs("1_A", 3))
    q.add(_jobs("2_B", 3))
    q.add(_jobs("3_C", 8))
    a, b = deque(), deque()
    assert [j.problem.name for j in q.refill(a, [b])] == ["1_A"] * 3 + ["2_B"] * 3  # whole problems up to low_water
    assert len(q.refill(b, [a])) == 8 and len(q) == 0
    c = deque()
    taken = q.refill(c, [a, b])  # the queue is empty: half of the largest share, from its end
    assert [j.key for j in taken] == [("m", "level1/3_C", i) for i in (4, 5, 6, 7)] and len(b) == 4
    assert q.refill(c, [a, b]) == []  # a judge that holds work takes nothing


def test_work_given_back_goes_first_grouped_by_problem():
    q = WorkQueue(low_water=2)
    q.add(_jobs("3_C", 2))
    lost = _jobs("1_A", 2) + _jobs("2_B", 1)
    q.put_back([lost[2], lost[0], lost[1]])
    share = deque()
    q.refill(share, [])
    assert [j.key for j in share] == [("m", "level1/2_B", 0), ("m", "level1/1_A", 0), ("m", "level1/1_A", 1)]


def test_work_a_lost_judge_held_goes_to_the_front_of_the_least_loaded_live_share():
    """Not behind the whole problems a survivor already holds (a problem of fifty samples)."""
    q = WorkQueue(low_water=2)
    q.add(_jobs("9_Z", 2))
    busy, light = deque(_jobs("3_C", 50)), deque(_jobs("4_D", 3))
    lost = _jobs("1_A", 2) + _jobs("2_B", 1)
    q.put_back([lost[2], lost[0], lost[1]], [busy, light])
    assert [j.key for j in list(light)[:3]] == [("m", "level1/2_B", 0), ("m", "level1/1_A", 0), ("m", "level1/1_A", 1)]
    assert len(light) == 6 and len(busy) == 50 and len(q) == 2  # nothing else moved
    q.put_back(_jobs("5_E", 1), [])  # no judge alive: the queue's front
    share = deque()
    q.refill(share, [])
    assert share[0].key == ("m", "level1/5_E", 0)


def test_a_judge_whose_jobs_all_wait_on_slow_builds_takes_half_of_the_largest_share():
    """A build that hangs until its limit would keep that judge idle while another holds work."""
    q = WorkQueue(low_water=2)
    waiting, other = deque(_jobs("1_A", 1)), deque(_jobs("2_B", 4))
    assert q.refill(waiting, [other]) == []  # holding a job, not stuck: it takes nothing
    taken = q.refill(waiting, [other], stuck=True)
    assert [j.key for j in taken] == [("m", "level1/2_B", 2), ("m", "level1/2_B", 3)] and len(other) == 2
    assert [j.key for j in waiting][0] == ("m", "level1/1_A", 0)
