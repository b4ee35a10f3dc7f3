import math

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kbench_lib.scoring import metrics
from kbench_lib.scoring.records import SCHEMA, RecordWriter, read_records, save_records, truncate


def _row(problem, correct=True, flags=(), s_eager=2.0, s_compile=None, model="m", device="cuda", backend="cuda", small=False):
    return {"model": model, "problem": problem, "level": "level1", "correct": correct, "flags": list(flags),
            "speedup_eager": s_eager if correct else None, "speedup_compile": s_compile, "failure": None if correct else "output_mismatch",
            "sample": 0, "device": device, "backend": backend, "small": small}


def test_append_and_read_back(tmp_path):
    w = RecordWriter(tmp_path, "r1")
    w.append(_row("a"))
    w.append([_row("b", correct=False), _row("c", flags=["x"])])
    df = read_records(tmp_path, "r1")
    assert sorted(df["problem"]) == ["a", "b", "c"]
    assert list(df.columns) == SCHEMA.names
    assert (df["run_id"] == "r1").all()
    assert len(read_records(tmp_path)) == 3


def test_save_records_round_trips_a_filtered_frame(tmp_path):
    """What read_records returns, filtered, saves to one file with the schema (the map column too)."""
    w = RecordWriter(tmp_path, "r1")
    w.append([dict(_row("a"), judge_stages=[("timing", 1.5), ("worker_start", 6.0)]), _row("b", correct=False)])
    df = read_records(tmp_path, "r1")
    with pytest.raises(Exception):  # why save_records exists: pandas cannot write the map column
        df.to_parquet(tmp_path / "plain.parquet")
    out = save_records(df[df["correct"]], tmp_path / "out" / "a.parquet")
    t = pq.read_table(out)
    assert t.schema.equals(SCHEMA) and t.num_rows == 1
    assert dict(t.column("judge_stages")[0].as_py()) == {"timing": 1.5, "worker_start": 6.0}


def test_schema_only_gains_columns(tmp_path):
    """A file written before a column existed still reads, with nulls there."""
    d = tmp_path / "old" / "records"
    d.mkdir(parents=True)
    old = pa.table({"run_id": ["old"], "problem": ["p"], "correct": [True]})
    pq.write_table(old, d / "part-0.parquet")
    df = read_records(tmp_path, "old")
    assert df.loc[0, "problem"] == "p" and pd.isna(df.loc[0, "speedup_eager"])


def test_truncate():
    assert truncate("abc", 10) == "abc"
    t = truncate("a" * 100 + "b" * 100, 20)
    assert t.startswith("a" * 10) and t.endswith("b" * 10) and "cut" in t


def test_fast_p_and_geomean():
    df = pd.DataFrame([_row("a", s_eager=2.0), _row("b", s_eager=0.5), _row("c", correct=False), _row("d", flags=["cheat"], s_eager=100.0)])
    assert metrics.correctness_rate(df) == 0.75
    assert metrics.fast_p(df, 0.0) == 0.5
    assert metrics.fast_p(df, 1.0) == 0.25  # the flagged 100x never counts
    assert metrics.geomean_speedup(df) == pytest.approx(1.0)  # sqrt(2 * 0.5)
    assert math.isnan(metrics.geomean_speedup(df, "compile"))
    s = metrics.summary(df)
    assert s.loc[0, "n"] == 4 and s.loc[0, "flagged"] == 0.25


def test_timing_kind_rule():
    rows = [_row("a"), _row("b", small=True), _row("c", device="cpu", backend="triton", small=True),
            _row("d", device="cpu", backend="cpp"), _row("e", device="cuda:1", backend="triton"), _row("f", device=None)]
    df = pd.DataFrame(rows)
    assert list(metrics.timing_kind(df)) == ["gpu", "gpu_small", "triton_interpreter", "cpu", "gpu", "unknown"]
    assert list(metrics.kernel_timed(df)) == [True, False, False, False, True, False]
    with pytest.raises(ValueError, match="device"):
        metrics.timing_kind(df.drop(columns=["device"]))


def test_interpreter_and_cpu_timings_never_count_as_speedups():
    """A Triton kernel timed through the interpreter (or any CPU timing) is correct but no speedup:
    it stays in fast_0, and is out of fast_p for p > 0, geometric means and best_per_problem's order."""
    gpu = [_row("g1", s_eager=2.0), _row("g2", s_eager=0.5)]
    interp = [_row("i1", device="cpu", backend="triton", small=True, s_eager=0.0004),
              _row("i2", device="cpu", backend="triton", small=True, s_eager=1e-4)]
    cpu = [_row("c1", device="cpu", backend="cpp", small=True, s_eager=50.0), _row("s1", small=True, s_eager=30.0)]
    only_cpu = pd.DataFrame(interp + cpu)
    assert metrics.fast_p(only_cpu, 0.0) == 1.0  # all correct and unflagged
    for p in (0.0001, 0.5, 1.0, 2.0):
        assert math.isnan(metrics.fast_p(only_cpu, p))  # no kernel was timed: not measured, not 0
    assert math.isnan(metrics.geomean_speedup(only_cpu))
    mixed = pd.DataFrame(gpu + interp + cpu)
    assert metrics.fast_p(mixed, 1.0) == 1 / 6  # only g1; the 50x CPU and 30x SMALL rows never count
    assert metrics.fast_p(mixed, 0.0001) == 2 / 6
    assert metrics.geomean_speedup(mixed) == pytest.approx(1.0)  # sqrt(2 * 0.5): only the GPU rows
    s = metrics.summary(only_cpu).iloc[0]
    assert s["fast_0"] == 1.0 and math.isnan(s["fast_1"]) and math.isnan(s["geomean_eager"])
    assert s["timing"] == "cpu, gpu_small, triton_interpreter"
    speed = metrics.kernel_speedup(mixed)
    assert speed.notna().sum() == 2 and speed.max() == 2.0


def test_failure_counts():
    df = pd.DataFrame([_row("a"), _row("b", correct=False), _row("d", flags=["x"])])
    c = metrics.failure_counts(df)
    assert c.loc["m", "trusted"] == 1 and c.loc["m", "output_mismatch"] == 1 and c.loc["m", "flagged"] == 1
    named = metrics.failure_counts(pd.DataFrame([_row("a"), _row("d", flags=["library_passthrough: ran aten::mm"])]), flag_names=True)
    assert named.loc["m", "flagged: library_passthrough"] == 1


def test_baseline_summary_per_level():
    import math

    import pandas as pd

    from kbench_lib.workflows import baseline_summary

    rows = []
    for problem, level, eager, compiled, graph, sol in [("l1/a", "level1", 2.0, 1.0, 2.0, 0.5), ("l1/b", "level1", 1.0, 2.0, 1.0, 0.5),
                                                          ("l1/c", "level1", 3.0, 1.0, None, 1.0), ("r/a", "robust", 4.0, 2.0, None, 1.0)]:
        for mode, ms in (("eager", eager), ("compile", compiled), ("cudagraph", graph)):
            rows.append({"problem": problem, "level": level, "mode": mode, "runtime_ms": ms, "sol_ms": sol,
                         "failure": None if ms is not None else "unsupported"})
    s = baseline_summary(pd.DataFrame(rows), suite={"level1": 100, "robust": 16}).set_index("level")
    assert s.loc["level1", "problems"] == 3 and s.loc["level1", "in_suite"] == 100
    assert s.loc["level1", "eager_ok"] == 3 and s.loc["level1", "cudagraph_ok"] == 2
    assert s.loc["level1", "median_eager_over_compile"] == 2.0  # ratios 2, 0.5, 3
    assert s.loc["level1", "median_eager_over_cudagraph"] == 1.0
    assert s.loc["level1", "median_eager_over_sol"] == 3.0  # 4, 2, 3
    assert s.loc["robust", "cudagraph_ok"] == 0 and math.isnan(s.loc["robust", "median_eager_over_cudagraph"])


def test_fast_p_weighs_problems_alike_over_their_attempts():
    rows = [_row("a", s_eager=2.0) for _ in range(4)] + [_row("b", correct=False)]
    df = pd.DataFrame(rows).assign(sample=[0, 1, 2, 3, 0])
    assert metrics.fast_p(df, 1.0) == 0.5 and metrics.fast_p(df, 0.0) == 0.5  # per row: 0.8
    assert metrics.correctness_rate(df) == 0.5 and metrics.geomean_speedup(df) == pytest.approx(2.0)
    chain = pd.DataFrame([_row("a", correct=False), _row("a", s_eager=3.0)]).assign(strategy="refine", sample=0, turn=[0, 1])
    assert len(metrics.attempts(chain)) == 1 and metrics.fast_p(chain, 2.0) == 1.0
