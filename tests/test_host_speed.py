"""The host-speed probe (kbench_lib.measure.host_speed): sampled between timed calls at most once
per interval, reported beside a timing, in a host-bound verdict's note and in the records."""
import math
import os

import pytest

from kbench_lib.judging.timed import _timing_stats
from kbench_lib.measure import host_speed, timing, trials
from kbench_lib.measure.timing_summary import host_bound_note
from kbench_lib.scoring.records import SCHEMA, row_from_verdict


def test_the_probe_times_its_loop():
    assert host_speed.probe_ms(0) < host_speed.probe_ms(400_000)  # 400k additions against none: no race
    assert math.isfinite(host_speed.probe_ms()) and host_speed.probe_ms() > 0


def test_probes_are_taken_at_most_once_per_interval():
    rare = host_speed.HostProbes(every_s=3600.0, loops=10)
    for _ in range(50):
        rare.maybe()
    assert len(rare.samples) == 1  # the first call always probes
    every = host_speed.HostProbes(every_s=0.0, loops=10)
    for _ in range(7):
        every.maybe()
    assert len(every.samples) == 7 and every.median_ms() is not None
    assert host_speed.HostProbes().median_ms() is None  # no call, no figure


def test_speed_ratio_is_the_baseline_over_the_candidate():
    assert host_speed.speed_ratio(1.5, 3.0) == 2.0
    assert host_speed.speed_ratio(None, 3.0) is None and host_speed.speed_ratio(1.5, 0.0) is None


def _t(ms, busy, probe):
    return timing.Timing(median_ms=ms, mean_ms=ms, std_ms=0.0, p10_ms=ms, p90_ms=ms, min_ms=ms, n_trials=20, rse=0.0,
                         device_union_ms=busy, host_probe_ms=probe, host_probes=10 if probe else 0)


def test_a_host_bound_note_gives_both_sides_host_speed():
    note = host_bound_note(_t(14.0, 9.1, 1.5).as_dict(), _t(20.0, 9.2, 2.9).as_dict())
    assert note.endswith("host-speed probe 1.5 ms while the candidate was timed, 2.9 ms while the baseline was (1.93x)")
    assert "probe" not in host_bound_note(_t(14.0, 9.1, None).as_dict(), _t(20.0, 9.2, 2.9).as_dict())


def test_a_malformed_probe_in_the_workers_report_is_refused():
    good = _t(14.0, 9.1, 1.5).as_dict()
    assert _timing_stats(good) is good
    assert "host_probe_ms" in _timing_stats({**good, "host_probe_ms": "fast"})
    assert "host_probes" in _timing_stats({**good, "host_probes": 2.5})


def test_the_records_keep_both_sides_probes():
    assert {"host_probe_ms", "baseline_host_probe_ms"} <= set(SCHEMA.names)
    v = {"problem": "p", "level": 3, "correct": True, "runtime_stats": _t(14.0, 9.1, 1.5).as_dict(),
         "baseline_stats": _t(20.0, 9.2, 2.9).as_dict()}
    row = row_from_verdict(v, run_id="r", model="eager")
    assert row["host_probe_ms"] == 1.5 and row["baseline_host_probe_ms"] == 2.9


@pytest.mark.gpu
def test_a_cuda_timing_reports_the_hosts_speed_over_its_timed_calls():
    import torch

    x = torch.randn(1 << 20, device="cuda")
    t = timing.time_cuda(lambda a: a * 2.0, [[x], [x.clone()]], min_trials=50, max_trials=10**6, budget_s=0.35, target_rse=0.0,
                         device_clock=False)  # no early stop: 0.35 s of calls, a probe every 0.1 s of them
    assert t.host_probes >= 2 and t.host_probe_ms > 0
    assert t.host_probes <= t.n_trials * (1 + t.remeasured)  # at most one probe per timed call


def test_full_speed_is_judged_against_the_fastest_probe_once_enough_were_seen(monkeypatch):
    monkeypatch.setattr(host_speed, "_SEEN", {"n": 0, "fastest": None})
    assert not host_speed.at_full_speed(1.0)
    for _ in range(host_speed.SEEN_ENOUGH - 1):
        host_speed.sample()
    fastest = host_speed._SEEN["fastest"]
    assert fastest > 0 and not host_speed.at_full_speed(fastest)  # one probe short of enough
    host_speed.sample()
    fastest = host_speed._SEEN["fastest"]  # the last probe may have been the fastest
    assert host_speed.at_full_speed(fastest * host_speed.FULL_SPEED)
    assert not host_speed.at_full_speed(fastest * host_speed.FULL_SPEED * 1.01) and not host_speed.at_full_speed(None)
    host_speed.HostProbes(every_s=0.0, loops=10).maybe()  # a probe of another size says nothing of the host's speed
    assert host_speed._SEEN["n"] == host_speed.SEEN_ENOUGH


def test_a_drift_follows_the_host_only_the_same_way_and_by_no_more_than_the_host_moved():
    follows = host_speed.drift_follows_host
    slow = [2.0, 2.1, 1.9]
    fast = [1.0, 1.05, 0.95]
    assert follows(10.0, 14.0, fast, slow)  # host 2x slower in the second half, the calls 1.4x
    assert follows(14.0, 10.0, slow, fast)  # and the other way round
    assert not follows(10.0, 14.0, slow, fast)  # the calls slowed while the host sped up
    assert not follows(10.0, 30.0, fast, slow)  # 3x against a host 2x slower: more than the host explains
    assert not follows(10.0, 14.0, fast, [2.0, 2.0])  # two probes in a half say too little
    assert not follows(10.0, 10.5, fast, fast)  # a steady host explains nothing


def _drifting_trial(probes, ms_first, ms_second, probe_first, probe_second, n=40):
    """A timed call of ``ms_first`` in the first ``n / 2`` calls of each run and ``ms_second`` after,
    with a probe of ``probe_first`` / ``probe_second`` recorded after every call as the CUDA
    clock's calls would (the probes' values fixed: the test decides what the host did)."""
    def trial(set_index):
        k = probes.calls
        probes.calls += 1
        second = k >= n // 2
        probes.record(probe_second if second else probe_first, k)
        return (ms_second if second else ms_first), 0, None
    return trial


@pytest.mark.parametrize("probe_second, kept", [(2.0, True), (1.0, False), (0.5, False)])
def test_a_drifting_run_is_measured_again_unless_its_halves_probes_drifted_with_it(probe_second, kept):
    probes = host_speed.HostProbes(loops=10)  # not counted among the process's probes
    trial = _drifting_trial(probes, 10.0, 14.0, 1.0, probe_second)
    t = trials._runs(trial, 2, False, None, 40, 40, 60.0, 0.0, probes=probes)
    assert t.n_trials == 40
    if kept:
        assert (t.remeasured, t.host_drift) == (0, 1)
    else:
        assert (t.remeasured, t.host_drift) == (trials.MAX_REMEASURE, 0)


def test_a_steady_run_takes_no_decision_from_the_probes():
    probes = host_speed.HostProbes(loops=10)
    t = trials._runs(_drifting_trial(probes, 10.0, 10.1, 1.0, 2.0), 2, False, None, 40, 40, 60.0, 0.0, probes=probes)
    assert (t.remeasured, t.host_drift) == (0, 0)


def test_a_timing_reports_the_probes_of_its_reported_run_only():
    probes = host_speed.HostProbes(loops=10)
    for ms in (5.0, 5.0, 5.0):
        probes.record(ms, 0)
    probes.new_run()
    assert probes.median_ms() is None and probes.halves(1) == ([], [])
    probes.record(1.0, 0)
    probes.record(3.0, 2)
    assert probes.median_ms() == 2.0 and probes.halves(1) == ([1.0], [3.0]) and probes.halves(1, start=1) == ([], [3.0])


def test_the_records_and_the_workers_report_carry_a_drift_kept_with_the_host():
    stats = {**_t(14.0, 9.1, 1.5).as_dict(), "host_drift": 1, "host_moved": 1, "host_wait_s": 0.4, "host_wait_reached": 1, "host_retried": 1}
    assert _timing_stats(stats) is stats and "host_drift" in _timing_stats({**stats, "host_drift": 0.5})
    assert "host_moved" in _timing_stats({**stats, "host_moved": -1}) and "host_wait_s" in _timing_stats({**stats, "host_wait_s": "x"})
    v = {"problem": "p", "level": 3, "correct": True, "runtime_stats": stats, "baseline_stats": _t(20.0, 9.2, 2.9).as_dict()}
    row = row_from_verdict(v, run_id="r", model="eager")
    assert row["timing_host_drift"] == 1 and row["timing_host_moved"] == 1 and row["timing_host_retried"] == 1
    assert "host_retried" in _timing_stats({**stats, "host_retried": 1.5})


def test_looking_for_the_hosts_full_speed(monkeypatch):
    monkeypatch.setattr(host_speed, "_SEEN", {"n": 0, "fastest": None})
    assert host_speed.to_a_fast_cpu(max_s=5.0) == (None, None, None) and host_speed._SEEN["n"] == 0  # nothing known: no probe
    monkeypatch.setattr(host_speed, "_SEEN", {"n": host_speed.SEEN_ENOUGH, "fastest": 1e6})
    assert host_speed.to_a_fast_cpu(max_s=5.0)[0] is not None  # any probe is within FULL_SPEED of a fastest of 1e6 ms
    monkeypatch.setattr(host_speed, "_SEEN", {"n": host_speed.SEEN_ENOUGH, "fastest": 1e-9})
    n = host_speed._SEEN["n"]
    assert host_speed.to_a_fast_cpu(max_s=0.1, every_s=0.01) == (None, None, None)  # no probe reaches a fastest of 1 fs
    assert host_speed._SEEN["n"] - n >= 3  # it probed while it looked


def test_a_cpu_timing_takes_the_hosts_full_speed_and_ignores_it():
    t = timing.time_callable(lambda a: a + 1, [[1], [2]], "cpu", min_trials=5, max_trials=5, budget_s=1.0, full_speed_ms=1.0)
    assert t.n_trials == 5 and t.host_wait_s is None and t.host_wait_reached == 0


@pytest.mark.gpu
def test_a_cuda_timing_of_host_bound_calls_waits_for_the_hosts_full_speed_and_of_device_bound_ones_does_not(monkeypatch):
    import torch

    small = torch.randn(64, device="cuda")

    def host_bound(a):  # 1,000 tiny kernels issued one by one: several ms of the host's time, past any spin
        for _ in range(1000):
            a = a + 1.0
        return a

    kw = {"min_trials": 20, "max_trials": 20, "budget_s": 5.0, "device_clock": False}
    before = os.sched_getaffinity(0)
    t = timing.time_cuda(host_bound, [[small], [small.clone()]], full_speed_ms=1e6, **kw)  # any probe is at full speed
    assert t.host_wait_s is not None and t.host_wait_reached == 1 and t.host_wait_s < 1.0 and t.host_moved == 0
    monkeypatch.setattr(host_speed, "WAIT_S", 0.3)
    t = timing.time_cuda(host_bound, [[small], [small.clone()]], full_speed_ms=1e-9, **kw)  # no probe is that fast
    assert t.host_wait_reached == 0 and t.host_wait_s >= 0.3 and t.host_moved == 0
    assert t.warmup_calls > 0 and t.n_trials == 20 and os.sched_getaffinity(0) == before  # every CPU tried, then back
    big = torch.randn(4096, 4096, device="cuda")
    t = timing.time_cuda(lambda a: a @ a, [[big], [big.clone()]], full_speed_ms=1e-9, **kw)  # the device's time: no wait
    assert t.host_wait_s is None and t.host_wait_reached == 0
    t = timing.time_cuda(host_bound, [[small], [small.clone()]], **kw)  # the host's full speed unknown: no wait
    assert t.host_wait_s is None


@pytest.mark.gpu
def test_a_host_bound_run_whose_host_slowed_is_run_again_on_a_cpu_at_full_speed(monkeypatch):
    """The host's speed made to follow the test: full speed when a CPU is looked for, slow over the
    first timed run (its CPU slowed after it was found). The run is run again once on a CPU found at
    full speed, and that run is reported with its own probes; where no CPU is found the second time,
    the first run stands; a run whose host stayed at full speed is not run again."""
    import torch

    small = torch.randn(64, device="cuda")

    def host_bound(a):  # 1,000 tiny kernels issued one by one: several ms of the host's time, past any spin
        for _ in range(1000):
            a = a + 1.0
        return a

    host = {"slow": False, "found_again": True}
    monkeypatch.setattr(host_speed, "probe_ms", lambda loops=host_speed.PROBE_LOOPS: 3.0 if host["slow"] else 1.0)
    real_sample = host_speed.sample

    def looked_for():  # a search for a fast CPU probes through sample()
        if host["slow"] and host["found_again"]:
            host["slow"] = False
        return real_sample()

    monkeypatch.setattr(host_speed, "sample", looked_for)
    monkeypatch.setattr(host_speed, "WAIT_S", 0.2)
    kw = {"min_trials": 20, "max_trials": 20, "budget_s": 5.0, "device_clock": False, "full_speed_ms": 1.0,
          "on_trials": lambda: host.update(slow=True)}
    sets = [[small], [small.clone()]]
    t = timing.time_cuda(host_bound, sets, warmup_sets=[[small.clone()]], **kw)
    assert t.host_retried == 1 and t.host_probe_ms == 1.0 and t.host_wait_reached == 1 and t.n_trials == 20, t
    assert t.first_round_ms is not None  # the first run's first round, carried over
    host["found_again"] = False
    t = timing.time_cuda(host_bound, sets, **kw)
    assert t.host_retried == 0 and t.host_probe_ms == 3.0 and t.host_wait_reached == 0 and t.host_wait_s >= 0.2, t
    host["slow"] = False
    t = timing.time_cuda(host_bound, sets, **{**kw, "on_trials": None})
    assert t.host_retried == 0 and t.host_probe_ms == 1.0 and t.host_wait_reached == 1, t


def test_a_thread_on_a_cpu_at_full_speed_stays_where_it_is_and_one_at_none_comes_back_as_it_was(monkeypatch):
    before = os.sched_getaffinity(0)
    took, cpu, was = host_speed.to_a_fast_cpu(fastest_ms=1e6)  # any probe is at full speed: not moved
    assert took is not None and cpu is None and was is None and os.sched_getaffinity(0) == before
    took, cpu, was = host_speed.to_a_fast_cpu(fastest_ms=1e-9, max_s=0.05)  # none is: every CPU tried, then back
    assert (took, cpu, was) == (None, None, None) and os.sched_getaffinity(0) == before
    monkeypatch.setattr(host_speed, "_SEEN", {"n": 0, "fastest": None})
    assert host_speed.to_a_fast_cpu() == (None, None, None)  # the full speed unknown: nothing tried


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to move between")
def test_a_thread_on_a_slow_cpu_moves_to_one_at_full_speed_and_back_when_done(monkeypatch):
    """The probe's speed made to depend on where the thread runs (the test decides which CPU is
    fast): the thread is pinned to the fast one, and back_to restores its CPUs."""
    before = os.sched_getaffinity(0)
    fast = max(before)
    monkeypatch.setattr(host_speed, "sample", lambda: 1.0 if os.sched_getaffinity(0) == {fast} else 3.0)
    took, cpu, was = host_speed.to_a_fast_cpu(fastest_ms=1.0, max_s=1.0)
    try:
        assert cpu == fast and was == before and os.sched_getaffinity(0) == {fast} and took is not None
    finally:
        host_speed.back_to(was)
    assert os.sched_getaffinity(0) == before


def test_a_process_learns_its_hosts_full_speed_on_each_of_its_cpus_once(monkeypatch):
    monkeypatch.setattr(host_speed, "_SEEN", {"n": 0, "fastest": None})
    before = os.sched_getaffinity(0)
    seen = []
    real = host_speed.sample
    monkeypatch.setattr(host_speed, "sample", lambda: seen.append(frozenset(os.sched_getaffinity(0))) or real())
    fastest = host_speed.learn_full_speed()
    assert fastest == host_speed._SEEN["fastest"] > 0 and host_speed._SEEN["n"] >= host_speed.SEEN_ENOUGH
    assert {next(iter(s)) for s in seen} == before and all(len(s) == 1 for s in seen)  # one CPU at a time, each of them
    assert os.sched_getaffinity(0) == before  # and back on them all
    n = host_speed._SEEN["n"]
    assert host_speed.learn_full_speed() == fastest and host_speed._SEEN["n"] == n  # known: no probe more


@pytest.mark.parametrize("span, remeasured, cut", [(None, 2, 0), (25.0, 1, 1), (15.0, 0, 1), (40.0, 2, 0)])
def test_a_drifting_run_is_measured_again_only_within_the_timings_span(monkeypatch, span, remeasured, cut):
    """Every run drifts, each call takes 0.25 s of the (fake) clock, a run 40 calls (10 s): a
    re-measurement is begun only where a run as long would still end within the span."""
    now = [0.0]
    monkeypatch.setattr(trials, "_monotonic", lambda: now[0])

    def trial(set_index):
        now[0] += 0.25
        trial.k += 1
        return (10.0 if trial.k % 40 < 20 else 14.0), 0, None
    trial.k = -1
    t = trials._runs(trial, 2, False, None, 40, 40, 60.0, 0.0, deadline=span)
    assert (t.remeasured, t.span_cut) == (remeasured, cut) and t.n_trials == 40
    assert now[0] == 10.0 * (1 + remeasured) and (span is None or now[0] <= span)
