"""benchmarks/throughput.py's host-memory figures: each RSS sample of a one-GPU pass is charged to
the problem whose candidate was being prepared or judged, against that problem's own input set."""
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import throughput  # noqa: E402

MB = 2**20


def test_each_sample_goes_to_the_candidate_recorded_next():
    floor = {"rss": 1000 * MB, "anon": 400 * MB}
    # verdicts recorded at t=10 (problem a), t=20 (b), t=30 (a again)
    ends = [(20.0, "b"), (10.0, "a"), (30.0, "a")]
    series = [
        (1.0, 1100 * MB, 450 * MB),   # a: preparing and judging its first candidate
        (10.0, 1300 * MB, 600 * MB),  # a: the sample at its verdict's time is still its own
        (15.0, 1500 * MB, 900 * MB),  # b: 500 MB over the floor
        (25.0, 1150 * MB, 420 * MB),  # a's second candidate: lower than its first
        (31.0, 9000 * MB, 9000 * MB),  # after the last verdict (tearing down): nobody's
    ]
    got = throughput.memory_by_problem(series, ends, floor, {"a": 150.0, "b": 1000.0})
    assert got == {
        "a": {"rss_over_floor_peak_mb": 300.0, "anon_over_floor_peak_mb": 200.0, "input_set_mb": 150.0, "ratio": 2.0},
        "b": {"rss_over_floor_peak_mb": 500.0, "anon_over_floor_peak_mb": 500.0, "input_set_mb": 1000.0, "ratio": 0.5},
    }
    worst = throughput._memory_worst(got)
    assert worst == {"problem": "a", "ratio": 2.0, "under_2x_everywhere": False}  # 2x is not under 2x


def test_a_problem_without_a_size_is_reported_without_a_ratio_and_below_the_floor_is_zero():
    got = throughput.memory_by_problem([(1.0, 900 * MB, 300 * MB)], [(2.0, "x")], {"rss": 1000 * MB, "anon": 400 * MB}, {})
    assert got == {"x": {"rss_over_floor_peak_mb": 0.0, "anon_over_floor_peak_mb": 0.0, "input_set_mb": None, "ratio": None}}
    assert throughput._memory_worst(got) is None
