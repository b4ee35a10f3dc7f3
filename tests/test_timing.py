import time

import pytest

from kbench_lib import timing


def test_summarize_median_and_quantiles():
    t = timing.summarize([1.0, 2.0, 3.0, 4.0, 100.0])
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


def test_drift_between_halves():
    assert not timing.drifted([1.0] * 50)
    assert not timing.drifted([1.0, 1.01] * 25)  # noise within tolerance
    assert timing.drifted([2.0] * 25 + [1.0] * 25)  # a clock that settled half-way
    assert not timing.drifted([0.003] * 25 + [0.004] * 25)  # 1 us apart: under the event clock's floor
    assert not timing.drifted([2.0] * 5 + [1.0] * 5)  # too few to tell


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


def test_device_spans_are_assigned_to_the_call_they_started_in():
    windows = [(100.0, 200.0), (0.0, 50.0), (300.0, 400.0)]
    spans = [(10.0, 5.0), (20.0, 7.0), (60.0, 100.0), (150.0, 30.0), (199.0, 500.0), (350.0, 1.0), (450.0, 9.0)]
    # the flush at 60 (between calls) and the span at 450 (after the last call) count for nobody
    assert timing.busy_per_window(windows, spans) == [12.0, 530.0, 1.0]


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
    assert h.unjoined_trials == 0
    assert s.unjoined_trials > 10
    assert s.median_ms > 0.5 * h.median_ms  # the side-stream work is still counted


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

    timing._warm_up(fn, [[1], [2]], n_timed_sets=5, warmup_ms=0.0, sync=sync)
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
    assert t1.device_calls == 30 and t1.device_ms is not None
    assert 0.85 * t1.median_ms < t1.device_ms <= 1.02 * t1.median_ms
    # two matmuls and an add, whatever stream they ran on
    assert 1.9 * t1.device_ms < t2.device_ms < 2.5 * t1.device_ms

