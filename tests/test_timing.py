import time

import pytest

from kbench_lib.measure import device_clock, timing, timing_summary, trials, unjoined


def test_summarize_median_and_quantiles():
    t = timing_summary.summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert t.median_ms == 3.0 and t.min_ms == 1.0 and t.n_trials == 5
    assert t.p90_ms == 100.0 and t.p10_ms == 1.0


def test_time_cpu_rotates_inputs_and_runs_min_trials():
    seen = []

    def fn(x):
        seen.append(x)
        return x

    kept = []
    t = timing.time_cpu(fn, [[1], [2], [3]], warmup_ms=0, min_trials=30, max_trials=30, budget_s=5, after_call=lambda k, i, out: kept.append((i, out)))
    assert t.n_trials == 30
    assert set(seen) == {1, 2, 3}
    assert all(out == i + 1 for i, out in kept)


def test_time_cpu_measures_sleep():
    t = timing.time_cpu(lambda: time.sleep(0.002), [[]], warmup_ms=0, min_trials=10, max_trials=10)
    assert 1.9 < t.median_ms < 20


def test_stops_at_budget():
    t0 = time.monotonic()
    timing.time_cpu(lambda: time.sleep(0.01), [[]], warmup_ms=0, min_trials=5, max_trials=10**6, budget_s=0.3, target_rse=0.0)
    assert time.monotonic() - t0 < 3


def test_min_trials_yield_to_the_budget_for_long_calls():
    # 100 calls of 15 ms would take 1.5 s against a 0.2 s budget: the run stops at the floor instead,
    # every set called at least twice; short calls still get min_trials
    seen = []
    t = timing.time_cpu(lambda x: (seen.append(x), time.sleep(0.015)), [[0], [1], [2]], warmup_ms=0, min_trials=100, max_trials=10**6,
                        budget_s=0.2, target_rse=0.0)
    assert t.n_trials == trials.TRIALS_FLOOR, t.n_trials
    assert all(seen.count(i) >= 2 for i in range(3))
    assert timing.time_cpu(lambda: None, [[]], warmup_ms=0, min_trials=100, max_trials=10**6, budget_s=5.0, target_rse=1.0).n_trials == 100
    # a min_trials under the floor is kept as given
    assert timing.time_cpu(lambda: time.sleep(0.015), [[]], warmup_ms=0, min_trials=5, max_trials=10**6, budget_s=0.0).n_trials == 5


def test_device_clock_calls_follow_the_work():
    assert timing.device_clock_calls(0.001) == device_clock.DEVICE_CALLS_MAX
    assert timing.device_clock_calls(2.0) == int(device_clock.DEVICE_CLOCK_S * 1e3 / 2.0)
    assert timing.device_clock_calls(20.0) == device_clock.DEVICE_CALLS_MIN  # 30 calls of 20 ms: within DEVICE_CLOCK_MAX_S
    assert timing.device_clock_calls(100.0) == 10  # a level-3 LSTM's 100 ms: 1 s of profiled calls, not 3
    assert timing.device_clock_calls(2000.0) == device_clock.DEVICE_CALLS_FLOOR
    assert all(timing.device_clock_calls(a) >= timing.device_clock_calls(b) for a, b in [(0.1, 1), (1, 10), (10, 50), (50, 500)])


def test_drift_between_halves():
    assert not timing_summary.drifted([1.0] * 50)
    assert not timing_summary.drifted([1.0, 1.01] * 25)  # noise within tolerance
    assert timing_summary.drifted([2.0] * 25 + [1.0] * 25)  # a clock that settled half-way
    assert not timing_summary.drifted([0.003] * 25 + [0.004] * 25)  # 1 us apart: under the event clock's floor
    assert not timing_summary.drifted([2.0] * 5 + [1.0] * 5)  # too few to tell


def test_a_run_that_drifts_is_measured_again():
    """The first run slows half-way (as a GPU dropping its clock would): it is discarded and
    measured again, and the result describes the steady state."""
    calls = [0]

    def fn():
        calls[0] += 1
        time.sleep(0.004 if 20 <= calls[0] <= 45 else 0.001)

    t = timing.time_cpu(fn, [[]], warmup_ms=0, min_trials=40, max_trials=40, max_remeasure=2)
    assert t.remeasured >= 1
    assert 0.9 < t.median_ms < 2.5 and t.n_trials == 40


def test_outputs_of_the_reported_run_are_the_ones_handed_for_re_checking():
    """A run measured anew is sampled too: were only the first (discarded) run's outputs kept, a
    candidate could drift on purpose while honest, then skip its work in the run that is reported."""
    calls, seen = [0], []

    def fn():
        calls[0] += 1
        time.sleep(0.004 if 20 <= calls[0] <= 45 else 0.001)
        return calls[0]

    t = timing.time_cpu(fn, [[]], warmup_ms=0, min_trials=40, max_trials=40, max_remeasure=2,
                        after_call=lambda k, i, out: seen.append((k, out)))
    assert t.remeasured >= 1
    starts = [n for n, (k, _) in enumerate(seen) if k == 0]
    assert len(starts) == t.remeasured + 1 and len(seen) == 40 * len(starts)
    assert seen[-1][1] == calls[0]  # the last call of the reported run was handed over


def test_every_timed_set_is_called_even_with_fewer_trials_than_sets():
    seen = set()
    timing.time_cpu(lambda x: x, [[1], [2], [3], [4], [5]], warmup_ms=0, min_trials=2, max_trials=3,
                    after_call=lambda k, i, out: seen.add(i))
    assert seen == {0, 1, 2, 3, 4}


def test_cpu_timing_does_not_remeasure_unless_asked():
    calls = [0]

    def fn():
        calls[0] += 1
        time.sleep(0.003 if calls[0] > 22 else 0.001)

    t = timing.time_cpu(fn, [[]], warmup_ms=0, min_trials=40, max_trials=40)
    assert t.remeasured == 0 and t.n_trials == 40 and calls[0] == 42


def test_first_round_survives_a_remeasurement():
    """The memoisation check's first round comes from the first run even when that run is redone."""
    calls = [0]

    def fn(x):
        calls[0] += 1
        time.sleep(0.005 if calls[0] <= 33 else 0.001)  # 3 warm-up calls, then a slow first run

    t = timing.time_cpu(fn, [[1], [2]], warmup_ms=0, min_trials=60, max_trials=60, warmup_sets=[[0]], max_remeasure=2)
    assert t.remeasured >= 1 and t.first_round_ms is not None and t.first_round_ms > 4


def test_the_first_round_is_reported_beside_its_peers_in_the_first_run():
    """first_round_ms: the first call on each unseen set; first_run_ms: the same run's other calls."""
    seen: set = set()

    def fn(x):
        time.sleep(0.004 if x not in seen else 0.0005)  # slow only on data it has not seen
        seen.add(x)

    t = timing.time_cpu(fn, [[1], [2], [3]], warmup_ms=0, min_trials=30, max_trials=30, warmup_sets=[[0]])
    assert t.first_round_ms > 3.5 and t.first_run_ms < 2 and t.remeasured == 0


def test_device_spans_are_assigned_to_the_call_they_started_in():
    windows = [(100.0, 200.0), (0.0, 50.0), (300.0, 400.0)]
    spans = [(10.0, 5.0), (20.0, 7.0), (60.0, 100.0), (150.0, 30.0), (199.0, 500.0), (350.0, 1.0), (450.0, 9.0)]
    # the flush at 60 (between calls) and the span at 450 (after the last call) count for nobody
    assert device_clock.busy_per_window(windows, spans) == [12.0, 530.0, 1.0]
    # busy time counts overlapping spans once: 10-15 and 20-27 apart; 150-180 inside 199-699 no, beside it
    assert device_clock.union_per_window(windows, spans) == [12.0, 530.0, 1.0]
    side_by_side = [(0.0, 10.0), (2.0, 10.0), (5.0, 1.0), (30.0, 4.0)]  # two streams overlapping 2-10, one inside
    assert device_clock.union_per_window([(0.0, 50.0)], side_by_side) == [16.0]
    assert device_clock.busy_per_window([(0.0, 50.0)], side_by_side) == [25.0]
    assert device_clock.union_per_window([(0.0, 1.0)], []) == [0.0]


def test_tampering_is_detected(monkeypatch):
    assert timing.tampered_bindings() == []
    monkeypatch.setattr(time, "perf_counter_ns", lambda: 0)
    assert timing.tampered_bindings() == ["time.perf_counter_ns"]


@pytest.mark.gpu
def test_time_cuda_flags_unjoined_side_stream_work():
    import torch

    x = torch.randn(4096, 4096, device="cuda")
    side = torch.cuda.Stream()

    def honest(a):
        return a @ a

    def sneaky(a):
        out = torch.empty_like(a)
        with torch.cuda.stream(side):
            torch.matmul(a, a, out=out)
        return out

    h = timing.time_cuda(honest, [[x]], min_trials=20, max_trials=20)
    s = timing.time_cuda(sneaky, [[x]], min_trials=20, max_trials=20)
    assert h.unjoined_trials == 0 and h.recheck_calls == 0 and not unjoined.unjoined_confirmed(h)
    assert s.unjoined_trials > 10
    assert s.recheck_calls >= 20 and s.unjoined_recheck > 0.9 * s.recheck_calls  # the re-check sees it too
    assert unjoined.unjoined_confirmed(s)
    assert s.median_ms > 0.5 * h.median_ms  # the side-stream work is still counted
    # the device-busy clock sees the side-stream matmul in both (every stream, overlaps once) and stays
    # near the honest call's timed median
    assert h.device_union_ms is not None and 0.5 * h.median_ms < h.device_union_ms <= 1.2 * h.median_ms
    assert s.device_union_ms is not None and s.device_union_ms > 0.5 * h.median_ms
    # the calling stream's own clock: the whole matmul for the honest call, the launch alone for the sneaky one
    assert h.stream_ms is not None and 0.8 * h.median_ms <= h.stream_ms <= 1.2 * h.median_ms
    assert s.stream_ms is not None and s.stream_ms < 0.2 * h.median_ms


def test_unjoined_work_is_flagged_only_when_the_recheck_agrees():
    burst = timing_summary.summarize([1.0] * 100, unjoined=40)  # a burst of late host wake-ups in the timed run
    assert timing.unjoined_suspected(burst.unjoined_trials, burst.n_trials)
    burst.unjoined_recheck, burst.recheck_calls = 3, 100
    assert not unjoined.unjoined_confirmed(burst)
    burst.unjoined_recheck = 26
    assert unjoined.unjoined_confirmed(burst)
    few = timing_summary.summarize([1.0] * 100, unjoined=25)  # the share must be exceeded, in both runs
    few.unjoined_recheck, few.recheck_calls = 100, 100
    assert not unjoined.unjoined_confirmed(few)
    never = timing_summary.summarize([1.0] * 100, unjoined=90)  # no re-check ran: nothing confirmed
    assert not unjoined.unjoined_confirmed(never)


def test_recheck_counts_late_calls_over_the_timed_sets(monkeypatch):
    seen = []

    def one(args):
        seen.append(args[0])
        return 0.1, int(len(seen) % 2 == 0), object()

    assert timing._recheck_unjoined(one, [[0], [1], [2]]) == (unjoined.RECHECK_CALLS // 2, unjoined.RECHECK_CALLS)
    assert set(seen) == {0, 1, 2}
    clock = iter(range(0, 10**6, 10))  # ten seconds per reading: past RECHECK_S once 20 calls ran
    # the re-check's home reads its own clock
    monkeypatch.setattr(unjoined, "_monotonic", lambda: float(next(clock)))
    assert timing._recheck_unjoined(one, [[0]])[1] == 20


def test_warm_up_holds_as_many_outputs_as_the_timed_loop_keeps():
    """The first timed round must not pay for fresh allocations later rounds do not: warm-up keeps
    n_sets + 1 outputs alive at once, as the timed loop (one kept per set, plus the new one) does."""
    import weakref

    class Out:
        pass

    live: list = []

    def fn(x):
        o = Out()
        live.append(weakref.ref(o))
        return o

    peak = [0]

    def sync():
        peak[0] = max(peak[0], sum(r() is not None for r in live))

    trials._warm_up(fn, [[1], [2]], n_timed_sets=5, warmup_ms=0.0, sync=sync)
    assert len(live) >= 6 and peak[0] == 6
    assert all(r() is None for r in live)  # released once warm-up ends


@pytest.mark.gpu
def test_device_busy_clock_counts_every_stream():
    """The device-busy clock sums every kernel of the call, on any stream, and no flush kernel; it
    sits under the end-to-end clock for a call that is one long kernel."""
    import torch

    a = torch.randn(4096, 4096, device="cuda")
    side = torch.cuda.Stream()

    def one(x):
        return x @ x

    def two_streams(x):
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            y = x @ x
        z = x @ x
        torch.cuda.current_stream().wait_stream(side)
        return y + z

    t1 = timing.time_cuda(one, [[a]], min_trials=20, max_trials=50, budget_s=2)
    t2 = timing.time_cuda(two_streams, [[a]], min_trials=20, max_trials=50, budget_s=2)
    assert device_clock.DEVICE_CALLS_MIN <= t1.device_calls <= device_clock.DEVICE_CALLS_MAX and t1.device_ms is not None
    assert 0.85 * t1.median_ms < t1.device_ms <= 1.02 * t1.median_ms
    # two matmuls and an add, whatever stream they ran on
    assert 1.9 * t1.device_ms < t2.device_ms < 2.5 * t1.device_ms



def test_head_start_ptx_assembles_for_hopper(tmp_path):
    """The spin kernel is PTX the driver compiles at load time; ptxas (where installed) checks it."""
    import shutil
    import subprocess

    from kbench_lib.measure import head_start

    ptxas = shutil.which("ptxas") or (shutil.which("nvcc") and str(__import__("pathlib").Path(shutil.which("nvcc")).parent / "ptxas"))
    if not ptxas or not __import__("os").path.exists(ptxas):
        pytest.skip("ptxas not installed")
    src = tmp_path / "spin.ptx"
    src.write_text(head_start.PTX)
    r = subprocess.run([ptxas, "-arch=sm_90", str(src), "-o", str(tmp_path / "spin.cubin")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_changed_head_start_is_tampering(monkeypatch):
    import ctypes

    from kbench_lib.measure.head_start import HeadStart

    hs = object.__new__(HeadStart)
    hs._launch, hs._func, hs.blocks, hs.fills_device = print, ctypes.c_void_p(1), 264, True
    hs._ns = ctypes.c_ulonglong(40000)
    hs._args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(hs._ns), ctypes.c_void_p))
    monkeypatch.setitem(timing._HEAD_STARTS, 99, (hs, timing._head_start_state(hs)))
    assert timing.tampered_bindings() == []
    hs.blocks = 1  # a spin on one SM would let side-stream work run beside it
    assert timing.tampered_bindings() == ["head start on cuda:99"]


def test_spin_lengths_cover_the_hosts_issue_time_and_the_first_call_gets_longer():
    """The head start is the shortest step of the ladder covering ISSUE_MARGIN x the p90 issue time
    of settled warm-up calls; the first call on a set (after its draw, cold caches) spins
    FIRST_CALL_STEPS steps longer; past the ladder's end, its longest step."""
    from types import SimpleNamespace

    steps = [SimpleNamespace(us=40.0 * k) for k in (1, 2, 4, 8, 16)]
    every, first = timing.choose_spins(steps, [10.0] * 20)
    assert (every.us, first.us) == (40.0, 160.0)
    every, first = timing.choose_spins(steps, [20.0] * 8 + [60.0] * 2)  # p90 60 us: 90 us needed
    assert (every.us, first.us) == (160.0, 640.0)
    every, first = timing.choose_spins(steps, [5000.0])
    assert (every.us, first.us) == (640.0, 640.0)
    assert timing.choose_spins([], [10.0]) == (None, None)
    assert timing.choose_spins(steps, [])[0].us == 40.0


@pytest.mark.gpu
def test_head_start_keeps_every_stream_off_the_device():
    """While the head start spins, a kernel launched on another stream, a high-priority one
    included, cannot start: it ends only after the spin and its own run time."""
    import torch

    from kbench_lib.measure.head_start import HeadStart

    dev = torch.device("cuda", torch.cuda.current_device())
    hs = timing.prepare(dev)
    assert hs is not None and hs.fills_device and hs.blocks >= torch.cuda.get_device_properties(dev).multi_processor_count
    props = torch.cuda.get_device_properties(dev)
    long_spin = HeadStart(props.multi_processor_count, props.max_threads_per_multi_processor, us=300.0)
    one_sm = HeadStart(1, props.max_threads_per_multi_processor, us=100.0)  # a few blocks: a short kernel of its own
    one_sm.blocks = 1
    side = torch.cuda.Stream(priority=-1)
    worst = 0.0
    for _ in range(5):
        begin, side_end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        begin.record()
        long_spin(torch.cuda.current_stream().cuda_stream)
        one_sm(side.cuda_stream)  # no ordering with the spin: the hardware alone keeps it off
        side_end.record(side)
        torch.cuda.synchronize()
        worst = max(worst, begin.elapsed_time(side_end) * 1e3)
    assert worst >= 300.0 + 100.0 - 15.0, f"side-stream kernel ended {worst:.1f} us after the start"


@pytest.mark.gpu
def test_head_start_takes_the_launch_path_out_of_the_end_to_end_clock():
    """For one small kernel, the end-to-end time with the head start sits within a few
    microseconds of the device-busy time; without it the host's launch path is inside."""
    import torch

    x, out = torch.randn(1 << 22, device="cuda"), torch.empty(1 << 22, device="cuda")

    def fn(a):
        return torch.mul(a, 1.0001, out=out)

    with_hs = timing.time_cuda(fn, [[x]], min_trials=100, max_trials=300, budget_s=1)
    without = timing.time_cuda(fn, [[x]], min_trials=100, max_trials=300, budget_s=1, head_start=False, device_clock=False)
    assert with_hs.head_start_us > 0 and without.head_start_us == 0
    assert with_hs.median_ms < without.median_ms
    # measured apart: 4.0-4.2 us on two H100s (2026-11-27, 12 timings, with the first calls' gate and
    # without: the same), 4.16 us once on the H200s (2026-11-27); without the head start 31-58 us
    assert abs(with_hs.median_ms - with_hs.device_ms) < 0.005, (with_hs.median_ms, with_hs.device_ms, without.median_ms)


@pytest.mark.gpu
def test_first_call_gate_holds_the_device_until_the_host_opens_it_or_its_cap():
    """Behind the gate, an event recorded after it fires only once the host has opened it (here
    after 0.8 ms of sleep, under its 2 ms cap); never opened, it lets go after its cap; and, like
    the spin, it keeps a kernel launched on another stream off the device while it holds."""
    import torch

    from kbench_lib.measure.head_start import Gate, HeadStart

    dev = torch.device("cuda", torch.cuda.current_device())
    timing.prepare(dev)
    gate = timing.first_call_gate(dev)
    assert gate is not None and gate.fills_device
    stream = torch.cuda.current_stream().cuda_stream
    for _ in range(3):
        before, after = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        before.record()
        gate(stream)
        after.record()
        time.sleep(0.0008)
        gate.release()
        torch.cuda.synchronize()
        held = before.elapsed_time(after)
        assert 0.8 <= held < 0.95 * gate.us / 1e3, held  # opened by the host, not by its cap
    props = torch.cuda.get_device_properties(dev)
    short = Gate(props.multi_processor_count, props.max_threads_per_multi_processor, cap_us=2000.0)
    side = torch.cuda.Stream(priority=-1)
    one_sm = HeadStart(1, props.max_threads_per_multi_processor, us=100.0)
    one_sm.blocks = 1
    before, after, side_end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    torch.cuda.synchronize()
    before.record()
    short(stream)  # never opened
    one_sm(side.cuda_stream)
    side_end.record(side)
    after.record()
    torch.cuda.synchronize()
    assert 2.0 <= before.elapsed_time(after) < 2.5
    assert before.elapsed_time(side_end) >= 2.0 + 0.1 - 0.015


@pytest.mark.gpu
def test_a_slow_host_on_first_calls_is_not_read_as_memoisation_but_slow_device_work_is():
    """A call whose host path is slow only on the first call on each set (as torch.compile's was
    after a set's draw) has a first round as fast as its repeats behind the gate; one whose device
    work is slow only on first calls (a memoising kernel) does not."""
    import torch

    class Touched(list):
        """Each set read once just before its first call, as the worker's draws do (warm address
        translation: otherwise a first call pays for it and the first round is slow on its own)."""

        def __getitem__(self, i):
            if i not in touched:
                touched.add(i)
                list.__getitem__(self, i)[0].sum()
                torch.cuda.synchronize()
            return list.__getitem__(self, i)

    touched: set = set()
    seen_host, seen_device = set(), set()

    def slow_host(a):
        if a.data_ptr() not in seen_host:
            seen_host.add(a.data_ptr())
            time.sleep(0.001)  # longer than any spin (640 us), shorter than the gate's 2 ms cap
        return a * 2.0

    def slow_device(a):
        if a.data_ptr() not in seen_device:
            seen_device.add(a.data_ptr())
            torch.cuda._sleep(2_000_000)  # about a millisecond of device time
        return a * 2.0

    warm = [[torch.randn(1 << 20, device="cuda")] for _ in range(2)]
    host = timing.time_cuda(slow_host, Touched([torch.randn(1 << 20, device="cuda")] for _ in range(5)), warmup_sets=warm, min_trials=100, max_trials=200, budget_s=2, device_clock=False)
    touched.clear()
    device = timing.time_cuda(slow_device, Touched([torch.randn(1 << 20, device="cuda")] for _ in range(5)), warmup_sets=warm, min_trials=100, max_trials=200, budget_s=2, device_clock=False)
    # the fastest first call, as the memoisation check reads it (the judge's own late wake-ups from
    # the sync slowed a third of honest first calls on a loaded H200 host: their median failed here)
    assert host.first_round_late == 0 and host.first_round_fastest_ms < 1.5 * host.median_ms + 0.005, host
    assert device.first_round_fastest_ms > 0.5 and device.first_round_fastest_ms > 10 * device.median_ms, device


def test_memoisation_is_read_from_the_fastest_first_call():
    """An honest call whose first round three late wake-ups of the judge's host slowed (median 30 us,
    fastest 7 us, repeats 7 us) is not flagged; a memoiser, slow on every first call, is."""
    import torch

    from kbench_lib.isolation.worker.timed import _timing_flags

    cuda = torch.device("cuda", 0)
    honest = timing.Timing(0.007, 0.008, 0.001, 0.007, 0.008, 0.007, 100, 0.001, 0, first_round_ms=0.030, first_round_fastest_ms=0.007)
    memo = timing.Timing(0.010, 0.012, 0.001, 0.010, 0.012, 0.010, 100, 0.001, 0, first_round_ms=0.600, first_round_fastest_ms=0.500)
    assert not [f for f in _timing_flags(honest, 0, cuda) if f.startswith("memoisation_suspected")]
    assert [f for f in _timing_flags(memo, 0, cuda) if f.startswith("memoisation_suspected")]
    older = timing.Timing(0.010, 0.012, 0.001, 0.010, 0.012, 0.010, 100, 0.001, 0, first_round_ms=0.600)  # no fastest: the median is read
    assert [f for f in _timing_flags(older, 0, cuda) if f.startswith("memoisation_suspected")]


def test_a_first_calls_late_gap_is_excused_only_by_an_idle_gap_as_late(monkeypatch):
    """The rule behind ``first_gap_rechecked``, without a GPU: the call's gap is judged against the
    floor shifted by how late the idle gap taken right after it was; an idle gap at the floor
    leaves the call timed to the sync, and never is a late idle gap taken off more than its lateness."""
    calls = object.__new__(timing._FlushedCalls)
    calls.device, calls.floors, calls.first_excused = None, {"first": unjoined.GapFloor(0.010, 0.015)}, 0
    idle = {"ms": 0.0}
    monkeypatch.setattr(timing, "_idle_gaps", lambda device, trials, spin: [idle["ms"]])
    calls.raw, calls.gap = 0.007, 0.250  # 7 us on its stream, its sync's event 250 us after its end
    idle["ms"] = 0.230  # the host as late right after it
    assert calls.first_gap_rechecked(0.247, None) == (0.007, 0) and calls.first_excused == 1
    idle["ms"] = 0.012  # the host on time: the gap is the call's own
    assert calls.first_gap_rechecked(0.247, None) == (0.247, 1) and calls.first_excused == 1
    idle["ms"] = 0.100  # late, but by less than the call's gap exceeds the floor and its margin
    assert calls.first_gap_rechecked(0.247, None) == (0.247, 1)


@pytest.mark.gpu
def test_a_late_wake_up_behind_first_calls_is_the_hosts_but_first_calls_left_on_a_side_stream_are_not(monkeypatch):
    """A slow spell of the judge's CPU over the first round (each wake-up from the device-wide sync
    200 us late, as on a slow virtual CPU) puts every first call's gap past the floor; the idle gap
    taken right after each is as late, so they are timed on their stream and the first round reads
    as fast as the repeats (a false memoisation flag in the GPU tests on an H200, 2026-11-28).
    A kernel that leaves its first calls' work on another stream outlasts that idle gap by itself,
    in the same spell, and is still timed to the sync."""
    import torch

    from kbench_lib.measure import unjoined

    spell = {"on": False}
    real_sync = timing._synchronize

    def slow_wake(device=None):
        real_sync(device)
        if spell["on"]:
            time.sleep(0.0002)

    monkeypatch.setattr(timing, "_synchronize", slow_wake)
    monkeypatch.setattr(unjoined, "_synchronize", slow_wake)
    side = torch.cuda.Stream()

    def runs(first_call_work):
        seen: set = set()

        def fn(a):
            if a.data_ptr() in seen:
                spell["on"] = False  # the spell covers the first round only
            else:
                seen.add(a.data_ptr())
                first_call_work()
            return a * 2.0

        warm = [[torch.randn(1 << 20, device="cuda")] for _ in range(2)]
        sets = [[torch.randn(1 << 20, device="cuda")] for _ in range(5)]
        torch.cuda.synchronize()
        return timing.time_cuda(fn, sets, warmup_sets=warm, min_trials=100, max_trials=200, budget_s=2, device_clock=False,
                                on_trials=lambda: spell.update(on=True))

    def on_a_side_stream():
        with torch.cuda.stream(side):
            torch.cuda._sleep(2_000_000)  # about a millisecond, never joined

    host = runs(lambda: None)
    hidden = runs(on_a_side_stream)
    # each first call 200 us late without the re-check; with it, those the host's own late wake-ups
    # (a third of first calls on a loaded host) did not slow further are timed on their stream
    assert host.first_round_excused >= 1 and host.first_round_fastest_ms < 1.5 * host.median_ms + 0.005, host
    assert hidden.first_round_excused == 0 and hidden.first_round_fastest_ms > 0.5, hidden
    assert hidden.first_round_fastest_ms > 10 * hidden.median_ms, hidden


def test_timed_output_samples_are_copies_that_stay_on_their_device():
    """Samples of timed outputs are cloned where the output lives (no host round trip between timed
    calls, so the GPU never idles and slows the next call), and later changes to the output do not
    reach the sample."""
    import torch

    from kbench_lib.isolation.worker.results import _snapshot

    out = torch.arange(6.0).reshape(2, 3).t()
    snap = _snapshot([out])
    assert snap[0].device == out.device and torch.equal(snap[0], out)
    assert snap[0].untyped_storage().data_ptr() != out.untyped_storage().data_ptr()
    out.zero_()
    assert snap[0].sum() == 15.0


def test_timed_output_samples_go_to_the_cpu_when_device_memory_runs_out(monkeypatch):
    import torch

    from kbench_lib.isolation.worker import results as worker  # the stage that takes samples: its globals are patched

    def no_memory(t):
        raise torch.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(worker, "_clone", no_memory)
    out = torch.ones(4)
    snap = worker._snapshot([out])
    assert snap[0].device.type == "cpu" and torch.equal(snap[0], out)
    assert snap[0].untyped_storage().data_ptr() != out.untyped_storage().data_ptr()


def test_timed_output_samples_leave_the_candidate_its_memory(monkeypatch):
    """Where device clones would leave less than the headroom free, the sample goes to the CPU."""
    import torch

    from kbench_lib.isolation.worker import results as worker  # the stage that takes samples: its globals are patched

    class FakeCuda:
        device = torch.device("cuda", 0)
        is_cuda = True

        def untyped_storage(self):
            class S:
                def nbytes(self):
                    return 30 << 30
            return S()

    monkeypatch.setattr(worker, "_mem_get_info", lambda d: (40 << 30, 80 << 30))
    monkeypatch.setattr(worker, "_to_cpu", lambda outs: ["on the cpu"])
    monkeypatch.setattr(worker, "_clone", lambda t: "on the device")
    monkeypatch.setattr(worker, "_detach", lambda t: t)
    assert worker._snapshot([FakeCuda()]) == ["on the cpu"]  # 40 GiB free - 30 < 20 GiB headroom
    monkeypatch.setattr(worker, "_mem_get_info", lambda d: (60 << 30, 80 << 30))
    assert worker._snapshot([FakeCuda()]) == ["on the device"]
    # blocks the caching allocator holds unused are the process's to reuse: 40 GiB free + 20 cached
    monkeypatch.setattr(worker, "_mem_get_info", lambda d: (40 << 30, 80 << 30))
    monkeypatch.setattr(worker, "_memory_reserved", lambda d: 25 << 30)
    monkeypatch.setattr(worker, "_memory_allocated", lambda d: 5 << 30)
    assert worker._snapshot([FakeCuda()]) == ["on the device"]


def test_the_candidates_other_processes_and_their_cpu_time_are_counted():
    """What a candidate runs beside its timed calls (a compiler's worker pool, say): its processes,
    grandchildren included, and the CPU seconds they used (Timing.others, others_cpu_s)."""
    import os
    import signal
    import subprocess
    import sys

    from kbench_lib.isolation.worker.probes import _descendants_cpu

    n0, cpu0 = _descendants_cpu()
    grandchild = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\ntime.sleep(20)\n"
    burn = f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {grandchild!r}]).wait()\n"
    child = subprocess.Popen([sys.executable, "-c", burn], start_new_session=True)  # its group: both killed below
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            n, cpu = _descendants_cpu()
            if n >= n0 + 2 and cpu - cpu0 >= 0.25:  # the child and its grandchild, the grandchild's CPU time
                break
            time.sleep(0.05)
        assert n >= n0 + 2 and cpu - cpu0 >= 0.25, (n0, cpu0, n, cpu)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def test_a_host_bound_timing_is_told_and_noted():
    from kbench_lib.measure.timing_summary import host_bound, host_bound_note

    def t(ms, busy):
        return timing.Timing(median_ms=ms, mean_ms=ms, std_ms=0.0, p10_ms=ms, p90_ms=ms, min_ms=ms, n_trials=20, rse=0.0,
                             device_union_ms=busy)

    steady, launch_bound, unknown = t(10.0, 9.5), t(14.0, 9.1), t(10.0, None)
    assert not host_bound(steady) and host_bound(launch_bound) and not host_bound(unknown)  # no device clock: not told
    assert host_bound_note(steady.as_dict(), steady.as_dict()) is None
    note = host_bound_note(launch_bound.as_dict(), t(20.0, 9.2).as_dict())
    assert note.startswith("host_bound: the candidate's device was busy 9.1 of 14 ms and the baseline's device was busy 9.2 of 20 ms")
    assert note.endswith("device-busy speedup 1.01x")
    assert host_bound_note(unknown.as_dict(), launch_bound.as_dict()).count("busy") == 1 and "speedup" not in host_bound_note(
        unknown.as_dict(), launch_bound.as_dict())
