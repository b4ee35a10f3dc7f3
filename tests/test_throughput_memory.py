"""benchmarks/throughput.py's figures: each RSS sample of a one-GPU pass is charged to the problem
whose candidate was being prepared or judged, against that problem's own input set; each GPU's
first and last verdict are timed from the pass's start."""
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


def test_each_devices_first_judgement_and_first_and_last_verdict_are_timed_from_the_passs_start():
    import pandas as pd

    t0 = 1_700_000_000.0
    df = pd.DataFrame({"device": ["cuda:0", "cuda:1", "cuda:0", "cuda:1"],
                       "timestamp": pd.to_datetime([t0 + 12.5, t0 + 19.25, t0 + 130.0, t0 + 126.0], unit="s", utc=True),
                       "judge_s": [2.5, 7.0, 1.0, 1.5]})
    assert throughput.per_device(df, t0) == {  # a judgement began judge_s before its verdict
        "cuda:0": {"candidates": 2, "first_judgement_began_s": 10.0, "first_verdict_s": 12.5, "last_verdict_s": 130.0},
        "cuda:1": {"candidates": 2, "first_judgement_began_s": 12.25, "first_verdict_s": 19.25, "last_verdict_s": 126.0},
    }
    assert throughput.per_device(df.iloc[:0], t0) == {}
