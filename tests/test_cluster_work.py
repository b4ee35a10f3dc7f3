"""The driver's work rules on a Ray cluster (kbench_lib.cluster.work), without Ray."""
from collections import deque
from pathlib import Path

from kbench_lib.cluster.work import Job, WorkQueue, jobs_for
from kbench_lib.models import Sample
from kbench_lib.problems import Problem


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
