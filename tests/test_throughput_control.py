"""benchmarks/throughput.py's eager control: each problem outside the band named with its cause,
and the control read on the device-busy clock too."""
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import throughput  # noqa: E402


def _row(problem, run, base, dev, base_dev, probe=None, base_probe=None):
    return {"model": "eager", "problem": problem, "speedup_eager": base / run, "runtime_ms": run, "baseline_eager_ms": base,
            "device_ms": dev, "baseline_eager_device_ms": base_dev, "failure": None, "flags": [],
            "host_probe_ms": probe, "baseline_host_probe_ms": base_probe}


def test_outside_the_band_each_problem_gets_its_cause():
    df = pd.DataFrame([
        _row("a", 1.0, 1.0, 0.98, 0.98),  # within the band
        _row("lstm", 14.2, 20.2, 9.1, 9.2),  # host time: the device clocks agree
        _row("gemm", 1.0, 1.2, 0.99, 1.19),  # the device times differ too
        _row("conv", 1.0, 0.9, 0.99, 0.99),  # device-bound, device clocks agree
        _row("none", 1.0, 1.3, None, 1.0),
    ])
    got = throughput.eager_speedups(df)
    assert got["timed"] == 5 and got["share_within_band"] == 0.2
    causes = {o["problem"]: o["cause"] for o in got["outside"]}
    assert causes["lstm"].startswith("host-bound")
    assert causes["gemm"].startswith("device time differs")
    assert causes["conv"].startswith("unexplained: device-bound")
    assert causes["none"].startswith("unexplained: no device-busy clock")
    # the device-busy clock's own control: a, lstm (1.011x), conv within; gemm (1.2x) outside; none has no clock
    assert got["device_clock"]["timed"] == 4 and got["device_clock"]["share_within_band"] == 0.75


def test_the_host_speed_probes_explain_a_host_bound_gap_only_in_its_direction():
    df = pd.DataFrame([
        _row("slow_baseline_host", 14.2, 20.2, 9.1, 9.2, 1.5, 2.9),  # baseline's host 1.9x slower, speedup 1.42x: explained
        _row("slow_candidate_host", 20.2, 14.2, 9.1, 9.2, 2.9, 1.5),  # the other way round: explained
        _row("same_host", 14.2, 20.2, 9.1, 9.2, 1.5, 1.52),  # the host ran at one speed: not explained
        _row("wrong_way", 14.2, 20.2, 9.1, 9.2, 2.9, 1.5),  # faster host for the baseline, yet a speedup: not explained
        _row("unprobed", 14.2, 20.2, 9.1, 9.2),
        _row("inside", 1.0, 1.0, 0.98, 0.98, 1.5, 3.0),  # inside the band: not counted, whatever the probes say
    ])
    got = throughput.eager_speedups(df)
    assert got["host_speed"] == {"probed": 4, "explained": 2}
    causes = {o["problem"]: o["cause"] for o in got["outside"]}
    assert "(1.93x)" in causes["slow_baseline_host"] and "does not explain" not in causes["slow_baseline_host"]
    assert "does not explain" not in causes["slow_candidate_host"]
    assert causes["same_host"].endswith("which does not explain the gap")
    assert causes["wrong_way"].endswith("which does not explain the gap")
    assert "probe" not in causes["unprobed"]


def test_the_reference_side_sums_preparation_measurements_and_the_verdicts_reference_stages():
    events = [
        {"event": "prepared", "key": "a", "seconds": 0.2}, {"event": "measured", "key": "a", "seconds": 0.05},
        {"event": "prepared", "key": "b", "seconds": 2.0},
        {"event": "prepared", "key": "c", "seconds": 0.1}, {"event": "begin", "key": "c", "seconds": None},
    ]
    df = pd.DataFrame([
        {"problem": "a", "judge_stages": [("baseline", 0.001), ("reference_profile", 0.002), ("run_timing", 3.0)]},
        {"problem": "b", "judge_stages": [("baseline", 0.001)]},
        {"problem": "c", "judge_stages": [("baseline", 6.0), ("baseline.stored", 0.001), ("variant_baseline", 0.5)]},
    ])
    got = throughput.reference_side(events, df)
    assert got["problems"] == 3 and got["max_s"] == 6.6 and got["median_s"] == 2.001
    assert list(got["over_1s"]) == ["c", "b"]  # the slowest first; a (0.253 s) is within the target
    assert got["over_1s"]["c"] == {"s": 6.6, "prepared": 0.1, "verdicts": 6.5}  # a dotted part is not counted twice
    assert throughput.reference_side([], pd.DataFrame()) == {"problems": 0}


def test_timed_runs_count_the_runs_measured_again_and_those_kept_with_the_host():
    df = pd.DataFrame([{"timing_remeasured": 1, "timing_host_drift": 0}, {"timing_remeasured": 0, "timing_host_drift": 1},
                       {"timing_remeasured": 2, "timing_host_drift": 1}, {"timing_remeasured": None, "timing_host_drift": None}])
    df["timing_host_moved"] = [1, 0, None, 1]
    df["timing_host_retried"] = [0, 1, None, None]
    assert throughput.timed_runs(df) == {"remeasured": 2, "host_drift_kept": 2, "moved_to_a_fast_cpu": 2, "run_again_at_full_speed": 1}
    older = df.drop(columns=["timing_host_drift", "timing_host_moved", "timing_host_retried"])
    assert throughput.timed_runs(older) == {"remeasured": 2, "host_drift_kept": 0, "moved_to_a_fast_cpu": 0, "run_again_at_full_speed": 0}
