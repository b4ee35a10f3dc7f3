"""Generalisation timing (JudgeOptions.time_variants, ``--time-variants``): the candidate and the
eager baseline timed on every variant over never-seen input sets, the timed outputs re-checked,
per-variant speedups in the verdict and the records (the ``variant_speedups`` column that
kbench_lib.analysis.scaling.variant_speedups reads)."""
import math

import pandas as pd
import pytest

from conftest import FIXTURES
from kbench_lib.core.candidates import load_candidate
from kbench_lib.judging.pipeline import JudgeOptions, judge, prepare_problem
from kbench_lib.judging.plan import VARIANT_TIMING_SETS, plan_cases, timed_groups
from kbench_lib.suite.problems import load_problem
from kbench_lib.scoring.records import RecordWriter, read_records, row_from_verdict

ROW_SUM = FIXTURES / "derived" / "1_Row_Sum.py"  # SMALL has no SMALL_VARIANTS: two derived on the CPU
HERE = FIXTURES / "variant_timing"
VARIANTS = ["small_derived0", "small_derived1"]


def _opts(**kw) -> JudgeOptions:
    base = dict(device="cpu", timing_budget_s=0.2, min_trials=10, max_trials=50, warmup_ms=1.0, run_timeout_s=90)
    return JudgeOptions(**{**base, **kw})


def test_plan_adds_never_seen_timed_sets_per_variant_only_when_asked():
    p = load_problem(ROW_SUM)
    off = plan_cases(p, 1000, True, 5, 1, 5, "cpu")
    on = plan_cases(p, 1000, True, 5, 1, 5, "cpu", variant_timing_sets=VARIANT_TIMING_SETS)
    assert on[:len(off)] == off  # the default plan is unchanged: same cases, same seeds
    extra = on[len(off):]
    assert [s.config.name for s in extra] == [n for n in VARIANTS for _ in range(VARIANT_TIMING_SETS)] and all(s.timed for s in extra)
    for name in VARIANTS:
        checked = [s for s in on if s.config.name == name and not s.timed]
        timed = [s for s in extra if s.config.name == name]
        assert {s.init_seed for s in timed} == {checked[0].init_seed}  # the same model as its checked set
        assert not {s.input_seed for s in timed} & {s.input_seed for s in on if s not in timed}  # never seen before timing
    groups = timed_groups(on)
    assert [g[0] for g in groups] == ["small", *VARIANTS]  # the default configuration first
    assert all(all(on[i].timed for i in t) and not any(on[i].timed for i in w) for _, t, w in groups)
    assert [g[0] for g in timed_groups(off)] == ["small"]
    # no default timing sets: no variant is timed either (its group would be taken for the default's)
    assert not any(s.timed for s in plan_cases(p, 1000, True, 5, 1, 0, "cpu", variant_timing_sets=VARIANT_TIMING_SETS))


def test_prepared_problem_times_each_variant_baseline_once_backward_too():
    """The eager baseline per variant, cached; on a backward task (gradients through the timed
    sets' upstream gradients) as well as forward."""
    p = load_problem(FIXTURES.parent.parent / "problems" / "robust" / "1_Linear_Backward.py")
    opts = _opts(time_variants=True, seed=7)
    prep = prepare_problem(p, opts, "cpu")
    names = [n for n, _, _ in prep.timed_variants]
    assert len(names) >= 2 and all(len(t) == VARIANT_TIMING_SETS for _, t, _ in prep.timed_variants)
    default = prep.baseline(opts)
    first = prep.variant_baseline(names[0], opts)
    assert default.median_ms > 0 and first.median_ms > 0
    assert prep.variant_baseline(names[0], opts) is first  # measured once per prepared problem
    assert not prepare_problem(p, _opts(seed=7), "cpu").timed_variants  # off by default


def test_the_run_limit_grows_with_each_timed_variant():
    from kbench_lib.judging.worker_reports import VARIANT_TIMING_ALLOWANCE_S, run_limit_s
    from kbench_lib.measure.trials import MAX_REMEASURE

    p = load_problem(ROW_SUM)
    on, off = _opts(time_variants=True, seed=3), _opts(seed=3)
    assert run_limit_s(prepare_problem(p, off, "cpu"), off) == off.run_timeout_s
    grown = run_limit_s(prepare_problem(p, on, "cpu"), on)
    assert grown == on.run_timeout_s + len(VARIANTS) * ((1 + MAX_REMEASURE) * on.timing_budget_s + VARIANT_TIMING_ALLOWANCE_S)


def test_correct_cpp_candidate_gets_per_variant_speedups_in_verdict_and_records(tmp_path):
    from kbench_lib.analysis import scaling

    v = judge(load_problem(ROW_SUM), load_candidate(HERE / "row_sum_cpp.py"), _opts(time_variants=True))
    assert v.correct and v.flags == [], (v.failure, v.message, v.flags)
    assert v.variants_derived == VARIANTS and sorted(v.variant_timings) == VARIANTS
    for t in v.variant_timings.values():
        assert t["runtime_ms"] > 0 and t["baseline_ms"] > 0 and t["speedup"] is None  # CPU times: runtimes, no kernel speedup
    assert "run_variant_timing" in v.stage_s and "variant_timing" in v.stage_s
    RecordWriter(tmp_path, "r").append(row_from_verdict(v, run_id="r", model="m"))
    df = read_records(tmp_path, "r")
    assert df["variant_speedups"].iloc[0] is None
    assert dict(df["variant_runtime_ms"].iloc[0]) == pytest.approx({n: t["runtime_ms"] for n, t in v.variant_timings.items()})
    # CPU times are no kernel speedups: the analysis has none to show
    from kbench_lib.analysis.data import NoData

    with pytest.raises(NoData, match="kernel-timed"):
        scaling.variant_speedups(df)
    ratios = {n: t["baseline_ms"] / t["runtime_ms"] for n, t in v.variant_timings.items()}
    gpu = df.assign(device="cuda", small=False, variant_speedups=[ratios])  # the row as a GPU judgement records it: every variant in the table
    table = scaling.variant_speedups(gpu)
    assert sorted(table["variant"]) == VARIANTS and all(math.isfinite(s) and s > 0 for s in table["speedup"])


def test_candidate_wrong_only_on_a_variants_timed_sets_fails_and_passes_without_variant_timing(tmp_path):
    p, c = load_problem(ROW_SUM), load_candidate(HERE / "row_sum_cpp_variant_cache.py")
    v = judge(p, c, _opts(time_variants=True))
    assert not v.correct and v.failure == "output_mismatch", (v.failure, v.message)
    assert "during timing on small_derived" in v.message and v.variant_timings.get("small_derived0") is None
    # off (the default): each variant is checked once, the cache never answers, nothing is timed there
    plain = judge(p, c, _opts())
    assert not JudgeOptions().time_variants
    assert plain.correct and plain.variant_timings == {}, (plain.failure, plain.message)
    RecordWriter(tmp_path, "r").append(row_from_verdict(plain, run_id="r", model="m"))
    row = read_records(tmp_path, "r").iloc[0]
    assert row["variant_speedups"] is None and row["variant_runtime_ms"] is None and row["runtime_ms"] > 0 and pd.isna(row["speedup_eager"])


def test_cli_flag_sets_the_option():
    from kbench_lib.cli import build_parser
    from kbench_lib.cli.options import judge_options

    args = ["eval", str(ROW_SUM), str(HERE / "row_sum_cpp.py")]
    assert not judge_options(build_parser().parse_args(args)).time_variants
    assert judge_options(build_parser().parse_args([*args, "--time-variants"])).time_variants


@pytest.mark.gpu
def test_gpu_triton_row_sum_timed_on_each_derived_variant():
    """H100: an upstream-format problem at full size, its two derived variants timed; the masked
    Triton kernel is correct on each and gets a speedup per variant beside the default's."""
    p = load_problem(FIXTURES / "derived" / "3_Row_Sum_Upstream.py")
    opts = JudgeOptions(device="cuda", small=False, timing_budget_s=1.0, time_variants=True)
    v = judge(p, load_candidate(FIXTURES / "derived" / "row_sum_triton.py"), opts)
    assert v.correct and v.flags == [], (v.failure, v.message, v.flags)
    assert sorted(v.variant_timings) == ["derived0", "derived1"] and v.speedup > 0
    for name, t in v.variant_timings.items():
        assert t["runtime_ms"] > 0 and t["baseline_ms"] > 0 and t["speedup"] > 0, (name, t)
    print({"default": v.speedup, **{n: t["speedup"] for n, t in v.variant_timings.items()}})


CALL_LOG = '''# kbench: backend=torch
"""Row sum that logs the shape of every call to calls.log in its working folder (the job's)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        with open("calls.log", "a") as f:
            f.write("x".join(map(str, x.shape)) + "\\n")
        return x.sum(dim=1)
'''


def test_no_candidate_code_runs_after_the_default_configurations_timed_calls(tmp_path):
    """The default configuration is timed last: once its sampled outputs are written, no call of
    the candidate could rewrite them before the judge re-checks them (variants are timed first)."""
    from kbench_lib.core.candidates import Candidate

    p = load_problem(ROW_SUM)
    work = tmp_path / "job"
    work.mkdir()
    v = judge(p, Candidate(source=CALL_LOG, backend="torch"), _opts(time_variants=True), workdir=work)
    assert v.correct and sorted(v.variant_timings) == VARIANTS, (v.failure, v.message)
    shapes = (work / "calls.log").read_text().split()
    default = shapes[0]  # the first correctness call is on the default configuration
    assert len(set(shapes)) == 3
    last_variant = max(i for i, s in enumerate(shapes) if s != default)
    timed_default = shapes[last_variant + 1:]
    assert len(timed_default) >= 10 and set(timed_default) == {default}
