"""JudgeLanes: how arriving samples are spread over a batch's judging threads."""
import threading
import time
from pathlib import Path

import pytest

from kbench_lib.batch.lanes import JudgeLanes, LanesAborted
from kbench_lib.generation.models import Arrival, Sample


class _P:  # only the key matters to the lanes
    def __init__(self, key):
        self.key, self.path = key, Path(key)


def _arrivals(key, n):
    p = _P(key)
    return [Arrival(p, Sample(i, None), last=i == n - 1) for i in range(n)]


def test_a_problem_stays_on_one_lane_and_new_problems_go_to_the_least_loaded():
    lanes = JudgeLanes(2, limit=100)
    a, b = _arrivals("a", 3), _arrivals("b", 2)
    assert [lanes.put(x) for x in (a[0], b[0], a[1], b[1], a[2])] == [0, 1, 0, 1, 0]
    c = _arrivals("c", 1)
    assert lanes.put(c[0]) == 1  # lane 1 holds two, lane 0 three
    assert [lanes.get(0).sample.index for _ in range(3)] == [0, 1, 2]
    for _ in range(3):
        lanes.done(0)
    assert lanes.put(_arrivals("a", 1)[0]) == 0  # "a" ended with its last sample: a new "a" goes where there is room


def test_many_samples_of_one_problem_spread_over_the_lanes():
    """KernelBench's 100 samples of one problem on two GPUs: once its lane is ``split_after`` ahead
    of the least loaded one, the next sample goes there, and that lane becomes the problem's. Each
    lane hears that the problem ended once none of its samples waits there."""
    lanes = JudgeLanes(2, limit=100, split_after=3)
    xs = _arrivals("a", 10)
    assert [lanes.put(x) for x in xs] == [0, 0, 0, 1, 1, 1, 1, 1, 1, 0]
    assert lanes.ended_here(0) == [] and lanes.ended_here(1) == []  # both still hold samples of it
    assert [lanes.get(1).sample.index for _ in range(6)] == [3, 4, 5, 6, 7, 8]
    assert lanes.ended_here(1) == [] and lanes.ended_here(0) == []  # lane 1 could still take from lane 0's line
    assert [lanes.get(0).sample.index for _ in range(3)] == [0, 1, 2]
    assert lanes.ended_here(1) == ["a"] and lanes.ended_here(0) == []  # one left on lane 0, its next: never taken
    lanes.forget(1, "a")
    assert lanes.ended_here(1) == []
    assert lanes.get(0).sample.index == 9
    assert lanes.ended_here(0) == ["a"]
    lanes.forget(0, "a")
    assert lanes.ended_here(0) == [] and lanes.ended_here(1) == []
    for lane in (0, 0, 0, 0, 1, 1, 1, 1, 1, 1):
        lanes.done(lane)
    b = _arrivals("b", 2)  # few samples never split
    assert [lanes.put(x) for x in b] == [0, 0]
    assert lanes.put(_arrivals("a", 1)[0]) == 1  # a problem run again starts afresh on the least loaded lane


def test_a_problem_whose_samples_are_all_judged_before_it_ends_is_let_go_when_it_ends():
    lanes = JudgeLanes(2, limit=100, split_after=1)
    xs = _arrivals("a", 3)
    assert [lanes.put(x) for x in xs[:2]] == [0, 1]
    lanes.get(0)
    lanes.done(0)
    assert lanes.ended_here(0) == []  # its last sample has not come yet
    assert lanes.put(xs[2]) == 0
    lanes.get(0)
    assert lanes.ended_here(0) == ["a"] and lanes.ended_here(1) == []


def test_an_idle_lane_takes_the_last_waiting_sample_of_a_problem_it_has_prepared():
    """The end of a batch: lane 1 ran dry while lane 0 still holds samples. It takes from the end
    of lane 0's line, a sample of a problem it has reached before any other, and leaves lane 0
    its next one; the problem ends for each lane once none of its samples waits there."""
    lanes = JudgeLanes(2, limit=100, split_after=100)  # no split at put: everything of "a" on lane 0
    a, b = _arrivals("a", 4), _arrivals("b", 2)
    assert [lanes.put(x) for x in (*a[:3], *b, a[3])] == [0, 0, 0, 1, 1, 0]
    assert [lanes.get(1).sample.index for _ in range(2)] == [0, 1]  # its own "b"
    for _ in range(2):
        lanes.done(1)
    assert lanes.ended_here(1) == ["b"]
    lanes.forget(1, "b")
    got = lanes.get(1, wait=False)  # lane 0 waits with a0 a1 a2 a3; lane 1 has not reached "a": takes the last
    assert got is a[3] and lanes.pending == 4
    assert lanes.ended_here(1) == []  # it could take more of "a": it keeps the reference
    assert lanes.get(1, wait=False) is a[2]  # "a" reached now: it takes while lane 0 keeps one waiting
    assert lanes.get(1, wait=False) is a[1]
    assert lanes.ended_here(1) == ["a"]  # nothing of "a" left to take (busy until judged)
    assert lanes.get(1, wait=False) is None  # lane 0's next, a0, is never taken
    assert lanes.get(0) is a[0] and lanes.ended_here(0) == ["a"]


def test_a_judge_elsewhere_takes_the_last_waiting_sample_out_of_a_line():
    """A Ray judging actor's one-lane line: the driver takes its last waiting sample back for a
    judge that ran dry; the one the lane is judging is never taken."""
    lanes = JudgeLanes(1, limit=100)
    xs = _arrivals("a", 3)
    for x in xs:
        lanes.put(x)
    assert lanes.get(0) is xs[0]  # being judged
    assert lanes.take_waiting(0) == [xs[2]] and lanes.pending == 2
    assert lanes.take_waiting(0) == [xs[1]] and lanes.pending == 1
    assert lanes.take_waiting(0) == []  # only the one being judged is left
    lanes.done(0)
    lanes.close()
    assert lanes.get(0) is None and lanes.pending == 0


def test_an_idle_lane_leaves_a_short_line_of_a_problem_it_has_not_prepared():
    lanes = JudgeLanes(2, limit=100, split_after=100)
    xs = _arrivals("a", 2)
    assert [lanes.put(x) for x in xs] == [0, 0]
    assert lanes.get(1, wait=False) is None  # two waiting, a new problem for lane 1: not worth preparing
    lanes.put(_arrivals("a", 1)[0])  # a third, same problem ("a" runs again)
    assert lanes.get(1, wait=False) is not None


def test_a_waiting_lane_wakes_to_take_from_a_line_that_grew():
    lanes = JudgeLanes(2, limit=100, split_after=100)
    xs = _arrivals("a", 3)
    lanes.put(xs[0])
    got = []
    t = threading.Thread(target=lambda: got.append(lanes.get(1)))
    t.start()
    time.sleep(0.1)
    assert t.is_alive() and not got  # one sample on lane 0: nothing to take
    lanes.put(xs[1])
    lanes.put(xs[2])  # lane 0 holds three now
    t.join(timeout=5)
    assert got == [xs[2]]


def test_put_waits_while_the_limit_is_reached_and_close_drains():
    lanes = JudgeLanes(1, limit=2)
    xs = _arrivals("a", 4)
    lanes.put(xs[0])
    lanes.put(xs[1])
    t = threading.Thread(target=lanes.put, args=(xs[2],))
    t.start()
    time.sleep(0.2)
    assert t.is_alive() and lanes.pending == 2  # waits for room
    assert lanes.get(0) is xs[0]
    lanes.done(0)
    t.join(timeout=5)
    assert not t.is_alive() and lanes.pending == 2
    lanes.close()
    assert [lanes.get(0), lanes.get(0), lanes.get(0)] == [xs[1], xs[2], None]  # what it held, then the end


def test_abort_drops_what_waits_and_stops_the_feeder():
    lanes = JudgeLanes(2, limit=1)
    xs = _arrivals("a", 3)
    lanes.put(xs[0])
    errors = []

    def feed():
        try:
            lanes.put(xs[1])
        except LanesAborted as e:
            errors.append(e)

    t = threading.Thread(target=feed)
    t.start()
    time.sleep(0.1)
    lanes.abort(RuntimeError("disk full"))
    t.join(timeout=5)
    assert errors and isinstance(errors[0].__cause__, RuntimeError)
    assert lanes.get(0) is None and lanes.get(1) is None
    with pytest.raises(LanesAborted):
        lanes.put(xs[2])


class _Prepared:
    def __init__(self, key, size):
        self.key, self.size, self.released = key, size, False

    def held_bytes(self):
        return {"host": self.size, "device": 0}

    def release(self):
        self.released = True


def test_interleaved_problems_keep_their_prepared_reference_until_their_last_sample(monkeypatch):
    """Answers of eight problems arriving round-robin prepare each reference once (a keep of two
    prepared them again and again, each time with fresh seeds and a new eager baseline); past the
    byte budget the least recently used is let go."""
    from kbench_lib.batch import held_references

    made = []
    monkeypatch.setattr(held_references, "prepare_reference", lambda p, d, o, **kw: made.append(p.key) or _Prepared(p.key, 10))
    refs = held_references.PreparedReferences("cpu", None, budget=1000)
    problems = [_P(f"p{i}") for i in range(8)]
    for _ in range(3):
        for p in problems:
            assert refs.get(p).key == p.key
    assert made == [p.key for p in problems] and refs.prepared == 8
    first = refs.get(problems[0])
    refs.release("p0")
    assert first.released and refs.prepared == 8

    small = held_references.PreparedReferences("cpu", None, budget=25)  # room for two of 10 bytes
    held = [small.get(p) for p in problems[:3]]
    assert held[0].released and not held[1].released and not held[2].released
    # the host budget is split between the judging threads of a batch
    assert held_references.PreparedReferences("cpu", None, lanes=4).budget == held_references.host_memory() // 16
    assert held_references.host_memory() > 0


def test_prepared_references_on_a_gpu_keep_to_the_device_budget(monkeypatch):
    from kbench_lib.batch import held_references

    class OnDevice(_Prepared):
        def held_bytes(self):
            return {"host": 0, "device": self.size}

    monkeypatch.setattr(held_references, "prepare_reference", lambda p, d, o, **kw: OnDevice(p.key, 10))
    refs = held_references.PreparedReferences("cuda:0", None, budget=10**9, device_budget=25)
    held = [refs.get(_P(f"p{i}")) for i in range(3)]
    assert held[0].released and not held[1].released and not held[2].released


def test_a_prepared_problem_counts_what_it_holds(scale_add_relu):
    from kbench_lib.judging.pipeline import JudgeOptions, prepare_problem
    from kbench_lib.measure.tensors import nbytes

    prep = prepare_problem(scale_add_relu, JudgeOptions(device="cpu", timing=False, seed=5), "cpu")
    held = prep.held_bytes()
    assert held["device"] == 0 and held["host"] == sum(nbytes(c.expected) for c in prep.cases) > 0


def test_every_sample_is_judged_once_when_lanes_take_from_each_other():
    """Three lanes, uneven judging times, samples arriving while others are judged: each sample is
    taken exactly once, every lane hears each problem it reached end, and nothing is left over."""
    import random

    rng = random.Random(7)
    lanes = JudgeLanes(3, limit=40, split_after=4)
    arrivals = [a for k in range(12) for a in _arrivals(f"p{k}", rng.randint(1, 9))]
    taken, lock = [], threading.Lock()

    def judge(lane: int) -> None:
        held: dict[str, int] = {}
        while True:
            for key in lanes.ended_here(lane):
                if not held.get(key):
                    lanes.forget(lane, key)
            a = lanes.get(lane)
            if a is None:
                return
            held[a.problem.key] = held.get(a.problem.key, 0) + 1
            time.sleep(0.001 + rng.random() * (0.002 if lane < 2 else 0.02))  # lane 2 judges ten times slower
            with lock:
                taken.append((lane, a.problem.key, a.sample.index))
            held[a.problem.key] -= 1
            lanes.done(lane)

    threads = [threading.Thread(target=judge, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    given = {}
    for a in arrivals:
        given[(a.problem.key, a.sample.index)] = lanes.put(a)
    lanes.close()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    assert sorted((k, i) for _, k, i in taken) == sorted((a.problem.key, a.sample.index) for a in arrivals)
    assert lanes.pending == 0
    for lane in range(3):  # what each lane still had to let go, it can now
        for key in lanes.ended_here(lane):
            lanes.forget(lane, key)
    assert lanes._reached == {} and lanes._ended == set()
    assert len({lane for lane, _, _ in taken}) == 3
    assert any(given[(k, i)] != lane for lane, k, i in taken)  # some were taken from another lane's queue


def test_upcoming_names_the_problems_of_waiting_candidates_only():
    """A sample without a candidate (a corpus row without code) is recorded without its problem's
    reference: the lane does not prepare that problem ahead for it."""
    from kbench_lib.core.candidates import Candidate

    lanes = JudgeLanes(1, limit=100)
    empty, full = _P("empty"), _P("full")
    lanes.put(Arrival(empty, Sample(0, None, "no kernel", failure="no_code")))
    lanes.put(Arrival(full, Sample(0, Candidate("class ModelNew: pass", "torch"))))
    assert [p.key for p in lanes.upcoming(0)] == ["full"]


def test_a_sample_that_can_begin_goes_before_one_whose_build_is_still_running():
    """The next in line waits on its build: the first behind it that can begin at once comes
    first, and the next keeps its place; with none that can, the line's order holds."""
    lanes = JudgeLanes(1, limit=100)
    xs = _arrivals("a", 1) + _arrivals("b", 1) + _arrivals("c", 1)
    for x in xs:
        lanes.put(x)
    building = {"a", "b"}
    ready = lambda a: a.problem.key not in building  # noqa: E731
    assert lanes.get(0, ready=ready) is xs[2]
    assert lanes.get(0, ready=ready) is xs[0]  # none behind it can begin: the line's order
    building.clear()
    assert lanes.get(0, ready=ready) is xs[1]
    for _ in xs:
        lanes.done(0)
    lanes.close()
    assert lanes.get(0, ready=ready) is None


def test_only_a_sample_that_may_pass_goes_before_one_still_building():
    """``may_pass`` narrows who goes first (the local lane: a reference held or room for it); the
    next in line that does not wait on its build keeps its place whatever ``may_pass`` says."""
    lanes = JudgeLanes(1, limit=100)
    xs = _arrivals("a", 1) + _arrivals("b", 1) + _arrivals("c", 1)
    for x in xs:
        lanes.put(x)
    ready = lambda a: a.problem.key != "a"  # noqa: E731
    assert lanes.get(0, ready=ready, may_pass=lambda a: a.problem.key == "c") is xs[2]
    assert lanes.get(0, ready=lambda a: True, may_pass=lambda a: False) is xs[0]
