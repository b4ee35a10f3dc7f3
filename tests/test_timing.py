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
