"""The reference store (kbench_lib.judging.reference_store): the eager baselines and the reference's
profile measured once per key and read back, by another process too, as they were measured; an
edited problem, another precision, other timing options are other entries; a corrupt entry or one
stored under another key is measured again and replaced; turned off, it is never read or written.
All on the CPU (``reference_store=True``: the default uses it on CUDA devices only), SMALL shapes,
tiny timing budgets."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbench_lib.core.candidates import load_candidate
from kbench_lib.judging.pipeline import JudgeOptions, judge
from kbench_lib.judging import prepared as prepared_module
from kbench_lib.judging import reference_store
from kbench_lib.judging.prepared import prepare
from kbench_lib.measure.timing import Timing
from kbench_lib.suite.problems import load_problem

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
RELU = FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py"
OPTS = dict(device="cpu", timing_budget_s=0.2, min_trials=10, max_trials=50, warmup_ms=1.0, run_timeout_s=60, reference_store=True)

# one PreparedProblem in a fresh process: what it measured, what it read from the store
CHILD = """
import json, sys
from kbench_lib.judging.pipeline import JudgeOptions
from kbench_lib.judging.prepared import prepare
from kbench_lib.suite.problems import load_problem

opts = JudgeOptions(**json.loads(sys.argv[2]))
prep = prepare(load_problem(sys.argv[1]), "cpu", opts, small=True)
took = prep.measure_now(opts)
print(json.dumps({"took": took, "stored": prep.stored, "baseline": prep.baseline(opts).as_dict(),
                  "variants": {n: prep.variant_baseline(n, opts).as_dict() for n, _, _ in prep.timed_variants},
                  "profile": prep.reference_profile()}))
"""


@pytest.fixture
def store(tmp_path, monkeypatch):
    path = tmp_path / "store"
    monkeypatch.setenv(reference_store.ENV_DIR, str(path))
    return path


@pytest.fixture
def counted(monkeypatch):
    """How often the reference was timed and profiled in this process."""
    n = {"timed": 0, "profiled": 0}
    time_reference, profile_call = prepared_module.PreparedProblem._time_reference, prepared_module.profiling.profile_call

    def timed(self, *a, **kw):
        n["timed"] += 1
        return time_reference(self, *a, **kw)

    def profiled(*a, **kw):
        n["profiled"] += bool(kw.get("one_thread"))  # (which calls profile_call again, on the profiler's thread)
        return profile_call(*a, **kw)

    monkeypatch.setattr(prepared_module.PreparedProblem, "_time_reference", timed)
    monkeypatch.setattr(prepared_module.profiling, "profile_call", profiled)
    return n


def _opts(**kw) -> JudgeOptions:
    return JudgeOptions(**{**OPTS, **kw})


def _measure(problem, opts):
    prep = prepare(problem, "cpu", opts, small=True)
    took = prep.measure_now(opts)
    return prep, took


def _entries(store: Path, kind: str = "eager") -> list[Path]:
    return sorted(store.glob(f"*-{kind}-*.json")) if store.exists() else []


def test_a_second_process_reads_the_baselines_and_the_profile_as_they_were_measured(store):
    """The first process measures and stores (the default configuration's baseline, each timed
    variant's, the profile); a second, fresh process measures none of them (``<name>.stored`` in
    what measure_now reports, no timing phases) and gets every field back exactly."""
    opts = {**OPTS, "time_variants": True}
    env = {**os.environ, reference_store.ENV_DIR: str(store), "PYTHONPATH": str(REPO)}

    def child() -> dict:
        r = subprocess.run([sys.executable, "-c", CHILD, str(RELU), json.dumps(opts)], capture_output=True, text=True, env=env,
                           timeout=120)
        assert r.returncode == 0, r.stderr[-3000:]
        return json.loads(r.stdout.strip().splitlines()[-1])

    first = child()
    assert first["stored"] == {} and "baseline.warmup" in first["took"], first["took"]
    assert len(_entries(store)) == 3 and len(_entries(store, "profile")) == 1  # default, two variants; one profile
    second = child()
    assert set(second["stored"]) == {"baseline", "profile", *(f"variant:{n}" for n in first["variants"])}, second["stored"]
    assert {"baseline.stored", "profile.stored"} <= set(second["took"]) and "baseline.warmup" not in second["took"]
    assert second["baseline"] == first["baseline"] and second["variants"] == first["variants"]
    assert second["profile"] == first["profile"]
    measured = sum(first["took"][k] for k in ("profile", "baseline", *(f"variant:{n}" for n in first["variants"])))
    read = sum(second["took"][k] for k in ("profile", "baseline", *(f"variant:{n}" for n in first["variants"])))
    print(f"measured {measured:.3f} s in the first process, read {read:.3f} s in the second")
    assert read < measured


def test_a_judgement_uses_the_stored_baseline_and_says_so(store, counted):
    """Two judgements of one candidate, each preparing its own reference: the second reads the
    baseline and the profile, records ``baseline.stored`` and ``reference_profile.stored`` in its
    stage times, and its baseline is the first's, field for field."""
    problem, candidate = load_problem(RELU), load_candidate(FIXTURES / "candidates" / "scale_add_relu_torch.py")
    a = judge(problem, candidate, _opts())
    assert counted == {"timed": 1, "profiled": 1}
    b = judge(problem, candidate, _opts())
    assert counted == {"timed": 1, "profiled": 1}, "the second judgement measured the reference again"
    assert a.correct and b.correct and a.flags == b.flags  # (a torch candidate: library_passthrough, from the profile)
    assert "baseline.stored" not in a.stage_s and "reference_profile.stored" not in a.stage_s
    assert "baseline.stored" in b.stage_s and "reference_profile.stored" in b.stage_s, b.stage_s
    assert b.baseline_ms == a.baseline_ms and b.baseline_stats == a.baseline_stats
    assert b.reference_ops == a.reference_ops and b.reference_kernels == a.reference_kernels
    assert b.runtime_ms > 0 and b.speedup is None  # CPU times: no kernel speedup


def test_the_stored_timing_is_the_measured_one_field_for_field(store):
    prep, _ = _measure(load_problem(RELU), _opts())
    again, _ = _measure(load_problem(RELU), _opts())
    t, u = prep.baseline(_opts()), again.baseline(_opts())
    assert isinstance(u, Timing) and again.stored.keys() >= {"baseline"}
    assert u == t and u.as_dict() == t.as_dict() and u.phase_s == t.phase_s and u.n_trials == t.n_trials


def test_an_edited_problem_is_measured_again(store, tmp_path, counted):
    path = tmp_path / "level1" / "1_Scale_Add_ReLU.py"
    path.parent.mkdir()
    path.write_text(RELU.read_text())
    _measure(load_problem(path), _opts())
    path.write_text(RELU.read_text().replace("return [1.5]", "return [2.5]"))  # same shapes, another reference
    prep, took = _measure(load_problem(path), _opts())
    assert prep.stored == {} and "baseline.stored" not in took
    assert counted == {"timed": 2, "profiled": 2} and len(_entries(store)) == 2


def test_another_precision_or_timing_budget_is_another_entry(store, counted):
    problem = load_problem(RELU)
    _measure(problem, _opts())
    bf16, _ = _measure(problem, _opts(precision="bf16"))
    longer, _ = _measure(problem, _opts(timing_budget_s=0.3))
    assert bf16.stored == {} and set(longer.stored) == {"profile"}  # the profile does not depend on the timing options
    assert counted == {"timed": 3, "profiled": 2} and len(_entries(store)) == 3
    same, _ = _measure(problem, _opts(precision="bf16"))
    assert set(same.stored) == {"baseline", "profile"} and counted["timed"] == 3


@pytest.mark.parametrize("damage", ["garbage", "binary", "truncated", "empty", "not_an_object", "bad_timing", "wrong_type", "missing_field"])
def test_a_corrupt_entry_is_measured_again_and_replaced(store, counted, damage):
    problem = load_problem(RELU)
    _measure(problem, _opts())
    (entry,) = _entries(store)
    text = entry.read_text()
    entry.write_bytes({
        "garbage": b"{not json", "binary": b"\xff\xfe\x00\x01", "truncated": text[: len(text) // 2].encode(), "empty": b"",
        "not_an_object": b"[1, 2, 3]",
        "bad_timing": json.dumps({**json.loads(text), "value": {"median_ms": "fast"}}).encode(),
        "wrong_type": json.dumps({**json.loads(text), "value": {**json.loads(text)["value"], "n_trials": "many"}}).encode(),
        "missing_field": json.dumps({**json.loads(text), "value": {k: v for k, v in json.loads(text)["value"].items()
                                                                 if k != "stream_ms"}}).encode(),
    }[damage])
    prep, took = _measure(problem, _opts())
    assert "baseline" not in prep.stored and "baseline.warmup" in took and counted["timed"] == 2
    data = json.loads(entry.read_text())  # replaced by a valid entry, which the next preparation reads
    assert reference_store.decode_timing(data["value"]) == prep.baseline(_opts())
    again, _ = _measure(problem, _opts())
    assert "baseline" in again.stored and counted["timed"] == 2


def test_an_entry_stored_under_another_key_is_not_used(store, counted):
    """The key inside the file is compared on every read: an entry whose file name matches but
    whose key says another torch (or anything else) is measured again and overwritten."""
    problem = load_problem(RELU)
    first, _ = _measure(problem, _opts())
    (entry,) = _entries(store)
    data = json.loads(entry.read_text())
    data["key"]["machine"]["torch"] = "0.0.1"
    data["value"]["median_ms"] = 1e6  # a reading of it would show
    entry.write_text(json.dumps(data))
    prep, _ = _measure(problem, _opts())
    assert "baseline" not in prep.stored and counted["timed"] == 2 and prep.baseline(_opts()).median_ms < 1e6
    assert json.loads(entry.read_text())["key"]["machine"]["torch"] != "0.0.1"


def test_turned_off_it_is_never_read_or_written(store, monkeypatch, counted):
    problem = load_problem(RELU)
    _measure(problem, _opts())
    before = {p: p.read_bytes() for p in store.iterdir()}

    def refuse(*a, **kw):
        raise AssertionError("the reference store was used while turned off")

    monkeypatch.setattr(reference_store, "lookup", refuse)
    monkeypatch.setattr(reference_store, "remember", refuse)
    for opts in (_opts(reference_store=False), _opts(reference_store=None)):  # off; the default, on the CPU: off
        prep, took = _measure(problem, opts)
        assert prep.stored == {} and "baseline.warmup" in took
    assert counted == {"timed": 3, "profiled": 3}
    assert {p: p.read_bytes() for p in store.iterdir()} == before


def test_the_default_uses_it_on_cuda_devices_only():
    assert reference_store.enabled(None, "cuda:0") and reference_store.enabled(None, "cuda")
    assert not reference_store.enabled(None, "cpu")
    assert reference_store.enabled(True, "cpu") and not reference_store.enabled(False, "cuda:1")


def test_its_folder_is_the_build_caches_unless_named(monkeypatch, tmp_path):
    monkeypatch.delenv(reference_store.ENV_DIR, raising=False)
    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    assert reference_store.root() == tmp_path / "cache" / "reference"
    monkeypatch.setenv(reference_store.ENV_DIR, str(tmp_path / "elsewhere"))
    assert reference_store.root() == tmp_path / "elsewhere"


def test_an_unwritable_store_measures_and_goes_on(tmp_path, monkeypatch, counted):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(reference_store.ENV_DIR, str(blocker / "store"))  # a folder under a file: cannot be made
    prep, took = _measure(load_problem(RELU), _opts())
    assert prep.stored == {} and "baseline.warmup" in took and counted["timed"] == 1
    assert not list(tmp_path.glob("**/*.tmp"))


def test_the_cli_flag_turns_it_off():
    from kbench_lib.cli import build_parser
    from kbench_lib.cli.options import judge_options

    args = ["eval", str(RELU), str(FIXTURES / "candidates" / "scale_add_relu_torch.py")]
    assert judge_options(build_parser().parse_args(args)).reference_store is None
    assert judge_options(build_parser().parse_args([*args, "--no-reference-store"])).reference_store is False
    run = build_parser().parse_args(["run", str(RELU), "--model", "reference", "--no-reference-store"])
    assert judge_options(run).reference_store is False



def test_a_key_that_cannot_be_made_measures_and_says_why(store, monkeypatch, counted):
    def broken(device):
        raise OSError("no device properties")

    monkeypatch.setattr(reference_store, "machine", broken)
    prep, took = _measure(load_problem(RELU), _opts())
    assert prep.stored == {} and "baseline.warmup" in took and counted == {"timed": 1, "profiled": 1}
    assert any(n.startswith("reference store not used for baseline: OSError") for n in prep.notes), prep.notes
    assert not _entries(store)


def test_the_roofline_count_is_stored_and_the_bound_worked_out_for_each_device(store, monkeypatch):
    # counting runs the model under the FLOP counter (a level-3 GRU: seconds on the CPU, every batch);
    # the count is stored without a device, the bound is worked out from it for the device asked
    from kbench_lib.suite import roofline

    problem = load_problem(RELU)
    config = problem.declared_configs(small=True)[0]
    expected = {name: roofline.config_sol_ms(problem, config.overrides, name) for name in ("NVIDIA H100 80GB HBM3", "NVIDIA H200")}
    calls = []
    real = roofline.count
    monkeypatch.setattr(prepared_module.roofline, "count", lambda *a, **kw: calls.append(a) or real(*a, **kw))
    first = prepare(problem, "cpu", _opts(timing=False), small=True)
    h100 = first.sol_ms_on(config, "NVIDIA H100 80GB HBM3")
    assert h100 == expected["NVIDIA H100 80GB HBM3"] and len(calls) == 1
    again = prepare(problem, "cpu", _opts(timing=False), small=True)  # another batch: read, not counted
    assert again.sol_ms_on(config, "NVIDIA H100 80GB HBM3") == h100 and len(calls) == 1
    assert f"count:{config.name}" in again.stored
    assert again.sol_ms_on(config, "NVIDIA H200") == expected["NVIDIA H200"] != h100
    assert again.sol_ms_on(config, "a device without a spec") is None and len(calls) == 1
    # another precision is another count; the store off never reads it
    prepare(problem, "cpu", _opts(timing=False, precision="bf16"), small=True).sol_ms_on(config, "NVIDIA H100 80GB HBM3")
    assert len(calls) == 2
    prepare(problem, "cpu", _opts(timing=False, reference_store=False), small=True).sol_ms_on(config, "NVIDIA H100 80GB HBM3")
    assert len(calls) == 3
    # a corrupt count is counted again
    for f in store.glob("*-count-*.json"):
        f.write_text(json.dumps({**json.loads(f.read_text()), "value": {"flops": "many", "bytes": 1}}))
    prepare(problem, "cpu", _opts(timing=False), small=True).sol_ms_on(config, "NVIDIA H100 80GB HBM3")
    assert len(calls) == 4


def test_a_host_bound_baseline_is_not_kept(store, monkeypatch):
    """A baseline whose device was busy for under HOST_SHARE of its timed time holds the host's time
    of that moment: unless timed at the host's full speed (here: no host-speed probe at all), it is
    used for the batch that measured it and measured again by the next, never stored; the profile
    beside it is stored as usual."""
    from kbench_lib.measure import host_speed

    host_bound = Timing(median_ms=10.0, mean_ms=10.0, std_ms=0.1, p10_ms=9.9, p90_ms=10.1, min_ms=9.8, n_trials=20, rse=0.001,
                        device_ms=5.0, device_union_ms=5.0)
    calls = []
    monkeypatch.setattr(host_speed, "learn_full_speed", lambda: 1.0)  # the host's full speed known, without probing it here

    def timed(self, opts, compile_model=False, config=None):
        calls.append(config)
        return host_bound

    monkeypatch.setattr(prepared_module.PreparedProblem, "_time_reference", timed)
    first, _ = _measure(load_problem(RELU), _opts())
    assert first.baseline(_opts()) == host_bound and any("not kept (host-bound" in n for n in first.notes), first.notes
    assert _entries(store) == [] and len(_entries(store, "profile")) == 1 and len(calls) == 2  # timed again, in vain
    second, _ = _measure(load_problem(RELU), _opts())
    assert second.baseline(_opts()) == host_bound and "baseline" not in second.stored and len(calls) == 4


def test_a_host_bound_baseline_timed_at_the_hosts_full_speed_is_kept(store, monkeypatch):
    """Within FULL_SPEED of the fastest host-speed probe the judge has seen (once it has seen
    enough of them), a host-bound baseline's moment is the host's usual best: stored and read by
    the next batch. A slower one is not (timed again first)."""
    from kbench_lib.measure import host_speed

    def bound(probe):
        return Timing(median_ms=10.0, mean_ms=10.0, std_ms=0.1, p10_ms=9.9, p90_ms=10.1, min_ms=9.8, n_trials=20, rse=0.001,
                      device_ms=5.0, device_union_ms=5.0, host_probe_ms=probe, host_probes=10)

    measured = []

    def timed(self, opts, compile_model=False, config=None):
        measured.append(config)
        return timing

    monkeypatch.setattr(prepared_module.PreparedProblem, "_time_reference", timed)
    monkeypatch.setattr(host_speed, "_SEEN", {"n": host_speed.SEEN_ENOUGH, "fastest": 1.0})
    timing = bound(1.3)  # over FULL_SPEED x the fastest: a slow moment, timed again (the same here): not kept
    _measure(load_problem(RELU), _opts())
    assert _entries(store) == [] and len(measured) == 2
    timing = bound(1.2)
    _measure(load_problem(RELU), _opts())
    assert len(_entries(store)) == 1 and len(measured) == 3
    later, _ = _measure(load_problem(RELU), _opts())
    assert later.baseline(_opts()).host_probe_ms == 1.2 and "baseline" in later.stored and len(measured) == 3


def test_a_host_bound_baseline_timed_on_a_slow_host_is_timed_again(store, monkeypatch):
    """The first batch to meet a host-bound baseline on a slow host times it again (the timing
    looks for a CPU at full speed itself): the faster host's timing is used and, at full speed,
    stored, so the next batch reads it instead of measuring it again."""
    from kbench_lib.measure import host_speed

    probes = iter([1.6, 1.1])
    measured = []

    def timed(self, opts, compile_model=False, config=None):
        probe = next(probes)
        measured.append(probe)
        return Timing(median_ms=10.0 * probe, mean_ms=10.0, std_ms=0.1, p10_ms=9.9, p90_ms=10.1, min_ms=9.8, n_trials=20,
                      rse=0.001, device_ms=5.0, device_union_ms=5.0, host_probe_ms=probe, host_probes=10)

    monkeypatch.setattr(prepared_module.PreparedProblem, "_time_reference", timed)
    monkeypatch.setattr(host_speed, "_SEEN", {"n": host_speed.SEEN_ENOUGH, "fastest": 1.0})
    first, _ = _measure(load_problem(RELU), _opts())
    assert first.baseline(_opts()).host_probe_ms == 1.1 and measured == [1.6, 1.1]
    assert any("timed again, its first timing on a slow host (probe 1.6 ms, then 1.1 ms)" in n for n in first.notes), first.notes
    assert len(_entries(store)) == 1
    later, _ = _measure(load_problem(RELU), _opts())
    assert later.baseline(_opts()).host_probe_ms == 1.1 and "baseline" in later.stored and measured == [1.6, 1.1]


def test_of_two_timings_on_slow_hosts_the_faster_hosts_is_used_and_neither_stored(store, monkeypatch):
    from kbench_lib.measure import host_speed

    probes = iter([1.6, 1.9])

    def timed(self, opts, compile_model=False, config=None):
        probe = next(probes)
        return Timing(median_ms=10.0 * probe, mean_ms=10.0, std_ms=0.1, p10_ms=9.9, p90_ms=10.1, min_ms=9.8, n_trials=20,
                      rse=0.001, device_ms=5.0, device_union_ms=5.0, host_probe_ms=probe, host_probes=10)

    monkeypatch.setattr(prepared_module.PreparedProblem, "_time_reference", timed)
    monkeypatch.setattr(host_speed, "_SEEN", {"n": host_speed.SEEN_ENOUGH, "fastest": 1.0})
    first, _ = _measure(load_problem(RELU), _opts())
    assert first.baseline(_opts()).host_probe_ms == 1.6 and _entries(store) == []
