"""References prepared ahead (kbench_lib.batch.runner): while a judging thread's fork server starts, the
problems waiting in its line are prepared; later, the next problem's reference is prepared while a
worker starts behind its gate. Each reference is still prepared once, and the verdicts are those
of preparing each at its turn."""
import collections
import sys
import threading
import time
from pathlib import Path

from kbench_lib.batch import held_references, runner
from kbench_lib.isolation import server_pool
from kbench_lib.judging import prepared as prepared_module
from kbench_lib.judging.pipeline import JudgeOptions
from kbench_lib.core.candidates import Candidate
from kbench_lib.generation.models import Arrival, Sample
from kbench_lib.suite.problems import discover
from kbench_lib.scoring.records import RecordWriter, read_records

# a sample with a candidate: the lanes prepare ahead the problems of waiting candidates only
_CANDIDATE = Candidate("class ModelNew: pass", "torch")

HONEST_RELU = (Path(__file__).parent / "fixtures" / "candidates" / "scale_add_relu_torch.py").read_text()


class _P:
    def __init__(self, key):
        self.key = key


class _Held:
    def __init__(self, key):
        self.key = key

    def held_bytes(self):
        return {"host": 1, "device": 0}

    def release(self):
        pass


def test_the_line_is_prepared_in_order_while_the_server_starts(monkeypatch, tmp_path):
    made = []
    monkeypatch.setattr(held_references, "prepare_reference", lambda p, d, o, **kw: made.append(p.key) or _Held(p.key))
    starting = iter([False, False, True])
    monkeypatch.setattr(server_pool, "started", lambda cuda: next(starting))

    def batch():
        b = runner._Batch(RecordWriter(tmp_path, "ahead"), "ahead", "reference", "single", JudgeOptions(device="cpu"), ["cpu"], 0,
                          progress=False)
        for key in ("a", "b", "b", "c", "d"):
            b.lanes.put(Arrival(_P(key), Sample(0, _CANDIDATE)))
        return b

    first = batch()
    refs = held_references.PreparedReferences("cpu", None, budget=10**9)
    first.prepare_ahead(0, "cpu", refs)
    assert made == ["a", "b"]  # the server started after two
    first.prepare_ahead(0, "cpu", refs)  # once it has started, the lane prepares nothing ahead (nor asks again)
    assert made == ["a", "b"] and first.serving == {0}

    monkeypatch.setattr(server_pool, "started", lambda cuda: False)  # it never starts: bounded by the room to hold them
    small = held_references.PreparedReferences("cpu", None, keep=3, budget=10**9)
    made.clear()
    batch().prepare_ahead(0, "cpu", small)
    assert made == ["a", "b"] and not small.has_room()
    assert small.prepared == 2


def _two_problem_batch(fixtures, tmp_path, monkeypatch, run_id: str, first_candidate: str | None = None):
    probs = tmp_path / "problems" / "level1"
    probs.mkdir(parents=True, exist_ok=True)
    for name in ("1_Scale_Add_ReLU.py", "2_Linear_GELU.py"):
        (probs / name).write_text((fixtures / "problems" / "level1" / name).read_text())
    cands = tmp_path / "cands" / "level1"
    cands.mkdir(parents=True, exist_ok=True)
    gelu = (fixtures / "problems" / "level1" / "2_Linear_GELU.py").read_text().replace("class Model(", "class ModelNew(")
    for i in range(2):
        (cands / f"1_Scale_Add_ReLU__{i}.py").write_text((first_candidate if i == 0 and first_candidate else HONEST_RELU) + f"\n# {i}\n")
        (cands / f"2_Linear_GELU__{i}.py").write_text(gelu + f"\n# {i}\n")
    prepared = collections.Counter()
    real = held_references.prepare_reference

    def counting(problem, device, opts, **kw):
        prepared[problem.key] += 1
        return real(problem, device, opts, **kw)

    monkeypatch.setattr(held_references, "prepare_reference", counting)
    opts = JudgeOptions(device="cpu", timing_budget_s=0.2, min_trials=10, max_trials=50, warmup_ms=1.0, run_timeout_s=60)
    _, rows = runner.run_batch(discover(tmp_path / "problems"), f"folder:{tmp_path / 'cands'}", run_id=run_id,
                               runs_root=tmp_path / "runs", opts=opts, progress=False)
    return rows, prepared, read_records(tmp_path / "runs", run_id)


def test_the_next_problem_is_prepared_behind_a_starting_workers_gate(fixtures, tmp_path, monkeypatch):
    monkeypatch.setattr(server_pool, "started", lambda cuda: True)  # nothing prepared while the server starts
    first_begun = threading.Event()
    real_begin = runner._Batch.begin

    def begin(self, a, *args, **kwargs):
        if not first_begun.is_set():  # the first sample starts once every sample waits in the line
            deadline = time.monotonic() + 60
            while self.lanes.pending < 4 and time.monotonic() < deadline:
                time.sleep(0.01)
            first_begun.set()
        return real_begin(self, a, *args, **kwargs)

    monkeypatch.setattr(runner._Batch, "begin", begin)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from throughput import Timeline

    with Timeline() as timeline:
        rows, prepared, df = _two_problem_batch(fixtures, tmp_path, monkeypatch, "beside")
    assert sorted((r["problem"], r["failure"]) for r in rows) == [("level1/1_Scale_Add_ReLU", None)] * 2 + [
        ("level1/2_Linear_GELU", None)] * 2, [(r["failure"], r["message"]) for r in rows]
    assert dict(prepared) == {"level1/1_Scale_Add_ReLU": 1, "level1/2_Linear_GELU": 1}
    gated = {(p, s): any(k == "run_gate" for k, _ in st) for p, s, st in zip(df["problem"], df["sample"], df["judge_stages"])}
    # the first candidate's worker waited at its gate while the second problem was prepared; once
    # every problem of the line is held, no worker waits behind a gate
    assert gated[("level1/1_Scale_Add_ReLU", 0)]
    assert sum(gated.values()) == 1, gated
    # the batch's timeline says so too: each problem prepared once, the second after the first
    # judgement began (beside its worker), and every judgement begun
    events = [(e["event"], e["key"]) for e in timeline.events]
    assert events.count(("begin", "level1/1_Scale_Add_ReLU")) == 2 and events.count(("begin", "level1/2_Linear_GELU")) == 2
    assert [k for e, k in events if e == "prepared"] == ["level1/1_Scale_Add_ReLU", "level1/2_Linear_GELU"]
    assert events.index(("prepared", "level1/2_Linear_GELU")) > events.index(("begin", "level1/1_Scale_Add_ReLU"))
    assert all(e["seconds"] >= 0 for e in timeline.events if e["event"] == "prepared")
    assert all(e["t"] >= 0 for e in timeline.events)


def test_while_the_server_starts_samples_still_to_come_are_waited_for(monkeypatch, tmp_path):
    made = []
    monkeypatch.setattr(held_references, "prepare_reference", lambda p, d, o, **kw: made.append(p.key) or _Held(p.key))
    monkeypatch.setattr(server_pool, "started", lambda cuda: False)  # it never starts: only closing ends the wait
    batch = runner._Batch(RecordWriter(tmp_path, "later"), "later", "reference", "single", JudgeOptions(device="cpu"), ["cpu"], 0,
                          progress=False)

    def feed():
        time.sleep(0.3)
        batch.lanes.put(Arrival(_P("late"), Sample(0, _CANDIDATE)))
        time.sleep(0.3)
        batch.lanes.close()

    t = threading.Thread(target=feed)
    t.start()
    batch.prepare_ahead(0, "cpu", held_references.PreparedReferences("cpu", None, budget=10**9))
    t.join()
    assert made == ["late"]


def test_a_batch_prepares_beside_its_workers_unless_candidates_overlap(tmp_path):
    def batch(devices, overlap=False):
        return runner._Batch(RecordWriter(tmp_path, "b"), "b", "reference", "single", JudgeOptions(device="cpu"), devices, 0,
                             progress=False, overlap=overlap)

    assert batch(["cpu"]).prepares_beside()
    assert batch(["cpu", "cpu"]).prepares_beside()  # on several devices too (2026-11-27: the lead on the fault did not reproduce)
    assert not batch(["cpu"], overlap=True).prepares_beside()  # overlapped candidates have their own order


def test_an_oom_beside_a_preparation_is_judged_again_alone(fixtures, tmp_path, monkeypatch):
    """A worker that ran out of memory while the next problem's reference was prepared beside it is
    judged again with nothing beside it (the preparation's memory must not decide its verdict)."""
    monkeypatch.setattr(server_pool, "started", lambda cuda: True)
    begun = []
    real_begin = runner._Batch.begin

    def begin(self, a, device, prepared, gated, busy, lane=0, alone=False):
        if not begun:  # the first sample starts once every sample waits in the line
            deadline = time.monotonic() + 60
            while self.lanes.pending < 4 and time.monotonic() < deadline:
                time.sleep(0.01)
        step = real_begin(self, a, device, prepared, gated, busy, lane, alone)
        begun.append((a.problem.key, a.sample.index, alone, step.beside))
        return step

    monkeypatch.setattr(runner._Batch, "begin", begin)
    oom = HONEST_RELU.replace("return torch.relu(a * self.scale + b)", "raise MemoryError('out of memory')")
    rows, prepared, _ = _two_problem_batch(fixtures, tmp_path, monkeypatch, "oom", first_candidate=oom)
    first = [b for b in begun if b[:2] == ("level1/1_Scale_Add_ReLU", 0)]
    assert first == [("level1/1_Scale_Add_ReLU", 0, False, True), ("level1/1_Scale_Add_ReLU", 0, True, False)], begun
    verdicts = sorted((r["problem"], r["sample"], r["failure"]) for r in rows)
    assert verdicts[0] == ("level1/1_Scale_Add_ReLU", 0, "oom") and len(rows) == 4
    assert dict(prepared) == {"level1/1_Scale_Add_ReLU": 1, "level1/2_Linear_GELU": 1}


def test_a_preparation_ahead_is_given_up_once_the_server_is_ready(fixtures, monkeypatch, tmp_path):
    """The server becomes ready while a problem is being prepared ahead: its preparation stops at
    the next case, nothing of it is held, and the lane goes on to judge (the problem is prepared
    again when its turn comes)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from throughput import Timeline

    problems = {p.key: p for p in discover(fixtures / "problems")}
    relu, gelu = problems["level1/1_Scale_Add_ReLU"], problems["level1/2_Linear_GELU"]
    cases = {"n": 0}
    real_make_case = prepared_module.make_case

    def make_case(*args, **kwargs):
        cases["n"] += 1
        return real_make_case(*args, **kwargs)

    monkeypatch.setattr(prepared_module, "make_case", make_case)
    monkeypatch.setattr(server_pool, "started", lambda cuda: cases["n"] >= 2)  # ready once two cases are made
    b = runner._Batch(RecordWriter(tmp_path, "cancel"), "cancel", "reference", "single", JudgeOptions(device="cpu"), ["cpu"], 0,
                      progress=False)
    for p in (relu, gelu):
        b.lanes.put(Arrival(p, Sample(0, _CANDIDATE)))
    refs = held_references.PreparedReferences("cpu", JudgeOptions(device="cpu"), budget=10**9)
    with Timeline() as timeline:
        b.prepare_ahead(0, "cpu", refs)
    events = [(e["event"], e["key"]) for e in timeline.events]
    # two cases of the first problem made, then the server was ready: given up there
    assert ("cancelled", relu.key) in events and ("server_seen", None) in events, events
    assert cases["n"] == 2 and refs.keys() == [] and refs.prepared == 0 and b.serving == {0}
    got = refs.get(relu)  # its turn: prepared in full
    assert not isinstance(got, str) and refs.keys() == [relu.key] and cases["n"] > 3


class _Measurable(_Held):
    """A held reference whose measurements are recorded (``measured`` once measure_now ran)."""

    log: list = []

    def __init__(self, key, fail=False):
        super().__init__(key)
        self.done, self.fail = False, fail

    def measured(self, opts):
        return self.done

    def measure_now(self, opts, cancel=None):
        if cancel is not None and cancel():
            return {}
        if self.fail:
            raise RuntimeError("the reference failed")
        self.log.append(self.key)
        self.done = True
        return {"baseline": 0.5}


def _line(tmp_path, keys, device="cuda:0"):
    b = runner._Batch(RecordWriter(tmp_path, "measure"), "measure", "reference", "single", JudgeOptions(device="cpu"), [device], 0,
                      progress=False)
    for key in keys:
        b.lanes.put(Arrival(_P(key), Sample(0, _CANDIDATE)))
    return b


def test_while_the_server_starts_the_held_references_are_measured_the_next_judged_first(monkeypatch, tmp_path):
    """Once no more can be prepared ahead, a lane whose server still starts measures what the judge
    measures itself (baseline, profile) of the references it holds: the problem about to be judged
    first, then its line's order; it stops at the next measurement once the server is ready."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from throughput import Timeline

    fail = {"c"}
    monkeypatch.setattr(held_references, "prepare_reference", lambda p, d, o, **kw: _Measurable(p.key, p.key in fail))
    _Measurable.log = []
    ready = {"after": 2}
    monkeypatch.setattr(server_pool, "started", lambda cuda: len(_Measurable.log) >= ready["after"])
    b = _line(tmp_path, ["a", "b", "c", "d", "e"])
    refs = held_references.PreparedReferences("cuda:0", None, keep=5, budget=10**9, device_budget=10**9)
    with Timeline() as timeline:
        b.prepare_ahead(0, "cuda:0", refs, first=_P("b"))
    assert refs.keys() == ["a", "b", "c", "d"]  # prepared in the line's order as far as there was room
    assert _Measurable.log == ["b", "a"]  # then measured, the next judged first; the server was ready after two
    events = [(e["event"], e["key"]) for e in timeline.events]
    assert events[-3:] == [("measured", "b"), ("measured", "a"), ("server_seen", None)], events
    assert [e["parts"] for e in timeline.events if e["event"] == "measured"] == [{"baseline": 0.5}] * 2
    assert b.serving == {0}

    # the server never starts: every held one is measured; one that fails is left to be measured
    # when a candidate needs it (its failure is then that candidate's verdict), and never tried again here
    _Measurable.log, ready["after"] = [], 99
    b = _line(tmp_path, ["a", "b", "c", "d", "e"])
    refs = held_references.PreparedReferences("cuda:0", None, keep=5, budget=10**9, device_budget=10**9)
    with Timeline() as timeline:
        b.prepare_ahead(0, "cuda:0", refs)
    assert _Measurable.log == ["a", "b", "d"]
    failed = [e for e in timeline.events if e["event"] == "measure_failed"]
    assert [e["key"] for e in failed] == ["c"] and "RuntimeError: the reference failed" in failed[0]["parts"]["error"]
    assert timeline.events[-1]["event"] == "no_room" and b.not_ahead == {(0, "c")}

    # on the CPU nothing is measured ahead: it would share the cores the server starts on
    _Measurable.log = []
    b = _line(tmp_path, ["a", "b"], device="cpu")
    b.lanes.close()  # no more samples come: the lane stops waiting for them
    b.prepare_ahead(0, "cpu", held_references.PreparedReferences("cpu", None, keep=5, budget=10**9))
    assert _Measurable.log == []


def test_a_reference_measured_ahead_is_measured_once_and_says_what_it_took(fixtures, tmp_path, monkeypatch):
    """measure_ahead on real prepared references (CPU): each measured once, in order, its parts
    timed (profile, the eager baseline and its phases); the candidates later judged use it as is."""
    monkeypatch.setattr(server_pool, "started", lambda cuda: False)
    problems = {p.key: p for p in discover(fixtures / "problems")}
    relu, gelu = problems["level1/1_Scale_Add_ReLU"], problems["level1/2_Linear_GELU"]
    opts = JudgeOptions(device="cpu", timing_budget_s=0.2, min_trials=10, max_trials=50, warmup_ms=1.0)
    b = runner._Batch(RecordWriter(tmp_path, "m"), "m", "reference", "single", opts, ["cpu"], 0, progress=False)
    for p in (relu, gelu):
        b.lanes.put(Arrival(p, Sample(0, _CANDIDATE)))
    refs = held_references.PreparedReferences("cpu", opts, budget=10**9)
    for p in (relu, gelu):
        refs.get(p)
    assert not refs.held(gelu.key).measured(opts)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from throughput import Timeline

    with Timeline() as timeline:
        assert b.measure_ahead(0, "cpu", refs, first=gelu)
        assert b.measure_ahead(0, "cpu", refs, first=gelu)
        assert not b.measure_ahead(0, "cpu", refs, first=gelu)  # nothing left
    measured = [e for e in timeline.events if e["event"] == "measured"]
    assert [e["key"] for e in measured] == [gelu.key, relu.key]
    for e in measured:
        assert {"profile", "baseline", "baseline.warmup", "baseline.trials", "compile"} <= set(e["parts"]), e["parts"]
        assert e["seconds"] >= e["parts"]["baseline"] > 0
    ref = refs.held(gelu.key)
    assert ref.measured(opts)
    first = ref.baseline(opts)
    assert ref.measure_now(opts) == {} and ref.baseline(opts) is first  # measured once: the same timing from now on
