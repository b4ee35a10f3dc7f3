"""kbench_lib.analysis on small record frames built with the records schema (no judging)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from kbench_lib.analysis import data, explorer, failures, fusion, results, scaling, tables
from kbench_lib.scoring.records import SCHEMA

GPU = dict(device="cuda", device_name="GPU X", small=False, precision="fp32", run_id="r1", model="m", strategy="single", turn=0, flags=[],
           tags=["elementwise"], backend="cuda")


def frame(rows: list[dict]) -> pd.DataFrame:
    """Rows as read_records returns them (the schema's types), missing columns null."""
    full = [{**GPU, **r} for r in rows]
    return pa.Table.from_pylist([{k: r.get(k) for k in SCHEMA.names} for r in full], schema=SCHEMA).to_pandas()


def ok(problem, speed, sample=0, **kw):
    return dict(problem=problem, level=problem.split("/")[0], sample=sample, correct=True, speedup_eager=speed, runtime_ms=1.0 / speed,
                sol_ms=0.5 / speed, **kw)


def bad(problem, failure, message="", sample=0, **kw):
    return dict(problem=problem, level=problem.split("/")[0], sample=sample, correct=False, failure=failure, message=message, **kw)


# ---- results


def test_headline_matches_hand_computed_values_and_intervals_hold_them():
    df = frame([ok("level1/a", 2.0), ok("level1/b", 0.5), ok("level1/c", 4.0), bad("level1/d", "output_mismatch")])
    h = results.headline(df, n_boot=500)
    assert h["correct"][0] == pytest.approx(0.75)
    assert h["fast_1"][0] == pytest.approx(0.5)  # a and c of four
    assert h["geomean_eager"][0] == pytest.approx((2.0 * 0.5 * 4.0) ** (1 / 3))
    assert h["sol_fraction"][0] == pytest.approx(0.5)
    assert all(math.isnan(x) for x in h["geomean_compile"])  # no compile timing: not measured
    for name, (v, lo, hi) in h.items():
        if name != "geomean_compile":
            assert lo <= v + 1e-12 and v <= hi + 1e-12
    assert repr(results.headline(df, n_boot=500)) == repr(h)  # seeded: the same intervals every time


def test_cpu_rows_have_correctness_but_no_speedups():
    df = frame([{**ok("level1/a", 2.0), "device": "cpu"}, {**ok("level1/b", 3.0), "device": "cpu"}])
    t = results.results_table(df, n_boot=50)
    assert t["correct"].iloc[0] == 1.0 and t["fast_0"].iloc[0] == 1.0
    assert math.isnan(t["fast_1"].iloc[0]) and math.isnan(t["geomean_eager"].iloc[0]) and t["timing"].iloc[0] == "cpu"


def test_a_problems_candidates_are_resampled_together():
    # one problem with many identical samples must not narrow the interval as if they were independent
    df = frame([ok("level1/a", 2.0, sample=i) for i in range(20)] + [bad("level1/b", "crash", sample=i) for i in range(20)])
    v, lo, hi = results.headline(df, n_boot=400)["fast_0"]
    assert v == pytest.approx(0.5) and lo == 0.0 and hi == 1.0


def test_fast_p_curve_and_table():
    df = frame([ok("level1/a", 2.0), ok("level1/b", 0.5)])
    curve = results.fast_p_curve(df, by=("model",), ps=(0.0, 1.0, 3.0), n_boot=20)
    assert list(curve["fast_p"]) == [1.0, 0.5, 0.0]
    wide = results.fast_p_wide(curve, by=("model",), ps=(0.0, 1.0))
    assert list(wide.columns) == ["model", "fast_0", "fast_1"]


def test_tables_write_csv_and_latex_with_intervals(tmp_path):
    df = frame([ok("level1/a", 2.0), ok("level1/b", 0.5)])
    t = results.results_table(df, n_boot=50)
    csv, tex = tables.export(t[["model", "level", "correct", "correct_lo", "correct_hi"]], tmp_path / "t", caption="A_b", stats=["correct"])
    assert pd.read_csv(csv)["correct"].iloc[0] == 1.0
    text = tex.read_text()
    assert "1.00 [1.00, 1.00]" in text and r"\toprule" in text and r"A\_b" in text


# ---- failures

NVCC = """/tmp/x/main.cu(12): error: identifier "blockDimm" is undefined
      int i = blockIdx.x * blockDimm.x;"""
NVCC2 = """/tmp/y/cuda.cu(40): error: identifier "threadIdy" is undefined"""
GXX = "/tmp/z/main.cpp:2:47: error: expected primary-expression before ‘;’ token\nninja: build stopped: subcommand failed."


def test_compile_errors_are_classed_by_the_compilers_message():
    assert failures.compile_error_class(NVCC) == failures.compile_error_class(NVCC2) == "identifier ‹…› is undefined"
    assert failures.compile_error_class(GXX) == "expected primary-expression before ‹…› token"
    assert failures.compile_error_class("") == "unknown"


def test_runtime_errors_by_kind():
    assert failures.runtime_error_kind("RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors") == \
        "CUDA: an illegal memory access was encountered"
    assert failures.runtime_error_kind("Traceback (most recent call last):\n  File x\nIndexError: list index out of range") == "IndexError"


def test_taxonomy_stages_classes_threats_and_tags():
    df = frame([ok("level1/a", 2.0), bad("level1/b", "compile_error", GXX), bad("level2/c", "runtime_error", "ValueError: no", tags=["gemm", "relu"]),
                {**ok("level2/d", 9.0), "flags": ["library_passthrough: ran aten::mm", "suspect_import: imports gc"]}])
    tax = failures.taxonomy(df)
    assert list(tax["stage"]) == ["trusted", "build", "run", "flagged"]
    assert tax["class"].iloc[2] == "ValueError"
    assert tax["threats"].iloc[3] == ["#1-3 library passthrough, fallback, decoy", "static: suspect import"]
    by_tag = failures.breakdown(tax, "tag", "outcome")
    assert by_tag.loc["relu", "runtime_error"] == 1 and by_tag.loc["gemm", "runtime_error"] == 1
    assert failures.classes(tax)["count"].sum() == 3
    assert "<details>" in failures.examples_html(tax) and "ValueError: no" in failures.examples_html(tax)


# ---- fusion

KERNELS = [{"name": "triton_poi_fused_add_relu_0", "op": None, "count": 1, "device_us": 5.0},
           {"name": "sm90_xmma_gemm", "op": "aten::mm", "count": 1, "device_us": 50.0}]


def test_fusion_decisions_against_torch_compile():
    ref = [("aten::mm", 1), ("aten::add", 1), ("aten::relu", 1)]
    df = frame([
        {**ok("level2/g", 1.2), "reference_ops": ref, "profile_ops": [("aten::mm", 1)], "profile_kernels": KERNELS, "n_kernels": 2,
         "reference_n_kernels": 3},
        {**ok("level2/g", 1.1), "model": "torch-compile", "reference_ops": ref, "profile_ops": [("aten::mm", 1), ("aten::relu", 1)],
         "profile_kernels": KERNELS, "n_kernels": 2},
    ])
    t = fusion.fusion_table(df)
    cand = t[t["model"] == "m"].iloc[0]
    assert cand["replaced"] == "add, relu" and cand["in_library"] == "mm" and cand["own_kernels"] == 1 and cand["ops_per_own_kernel"] == 2
    vs = fusion.against_compile(t).iloc[0]
    assert vs["compile_replaced"] == "add" and vs["only_candidate_fused"] == "relu" and vs["only_compile_fused"] == ""
    dist = fusion.ops_per_kernel(df)
    assert set(dist["how"]) == {"kernel name", "replaced ops / own launches"}
    assert dist[dist["how"] == "kernel name"]["ops"].tolist() == [2]


def test_library_kernels_replayed_from_a_cuda_graph_are_not_the_candidates_own():
    """A candidate that replays a CUDA graph captured from the reference's calls runs the library's
    kernels with no ATen op launching them; their names say whose they are."""
    ref_kernels = [{"name": "sm90_xmma_gemm_f32f32", "op": "aten::mm", "count": 1, "device_us": 50.0},
                   {"name": "at::native::vectorized_elementwise_kernel<relu>", "op": "aten::relu", "count": 1, "device_us": 4.0}]
    replay = [{"name": "sm90_xmma_gemm_f32f32", "op": None, "count": 1, "device_us": 50.0},  # the reference's own GEMM kernel
              {"name": "void at::native::elementwise_kernel<add>", "op": None, "count": 1, "device_us": 3.0},  # PyTorch's, by namespace
              {"name": "fused_bias_relu_kernel", "op": None, "count": 2, "device_us": 6.0}]  # the candidate's own
    row = {"reference_ops": {"aten::mm": 1, "aten::relu": 1}, "profile_ops": {}, "profile_kernels": replay, "reference_kernels": ref_kernels}
    r = fusion.fusion_row(row)
    assert (r["own_kernels"], r["library_kernels"]) == (2, 2)
    # without the reference's kernel table the GEMM is still known by cuBLAS's name
    assert fusion.fusion_row({**row, "reference_kernels": None})["own_kernels"] == 2
    # every kernel launched by no op and named by no library is the candidate's
    own = [{**k, "name": f"k{i}"} for i, k in enumerate(replay)]
    assert fusion.fusion_row({**row, "profile_kernels": own})["own_kernels"] == 4


def test_a_gemm_run_in_another_form_is_still_left_to_the_library():
    """Inductor unfuses a Linear's bias into its epilogue and calls mm where the reference ran addmm
    (seen on an H200): the GEMM stayed in the library, the bias add was taken over."""
    ref = {"aten::addmm": 1, "aten::gelu": 1}
    d = fusion.decisions(ref, {"aten::mm": 1})
    assert d == {"in_library": {"aten::addmm": 1}, "replaced": {"aten::gelu": 1}, "extra": {}}
    # a second, different GEMM the reference never ran is extra, and a missing one is replaced
    assert fusion.decisions(ref, {"aten::mm": 2})["extra"] == {"aten::mm": 1}
    assert fusion.decisions({"aten::addmm": 2}, {"aten::bmm": 1})["replaced"] == {"aten::addmm": 1}


def test_fusion_distributions_count_trusted_candidates_and_compiles_latest_trusted_row():
    import datetime as dt

    from kbench_lib.analysis import charts

    ref = [("aten::mm", 1), ("aten::add", 1), ("aten::relu", 1)]
    prof = dict(reference_ops=ref, profile_kernels=KERNELS, n_kernels=2)
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    comp = dict(model="torch-compile", **prof)
    df = frame([
        {**ok("level2/g", 1.2), **prof, "profile_ops": [("aten::mm", 1)]},
        {**bad("level2/g", "output_mismatch", sample=1), **prof, "profile_ops": []},  # wrong: took everything over
        {**ok("level2/g", 1.3, sample=2), **prof, "profile_ops": [], "flags": ["library_passthrough: x"]},  # flagged
        {**ok("level2/g", 1.1), **comp, "profile_ops": [("aten::mm", 1), ("aten::relu", 1)], "timestamp": t0 + dt.timedelta(hours=2)},
        {**ok("level2/g", 1.0), **comp, "profile_ops": [("aten::mm", 1)], "timestamp": t0 + dt.timedelta(hours=1)},  # older, read later
        {**bad("level2/g", "output_mismatch"), **comp, "profile_ops": [], "timestamp": t0 + dt.timedelta(hours=3)},  # newest, untrusted
        {**ok("level2/h", 2.0), "reference_ops": ref, "profile_ops": [("aten::mm", 1), ("aten::add", 1), ("aten::relu", 1)],
         "profile_kernels": []},  # a profile with no kernel
    ])
    t = fusion.fusion_table(df)
    assert len(t) == 7 and t["trusted"].tolist() == [True, False, False, True, True, False, True]  # every candidate, marked
    assert t["outcome"].tolist()[:3] == ["trusted", "output_mismatch", "flagged"]
    assert t["own_kernels"].iloc[-1] == 0 and t["library_kernels"].iloc[-1] == 0  # empty kernel list: 0 kernels, not unknown
    vs = fusion.against_compile(t).set_index("sample").loc[0]
    assert vs[vs["problem"] == "level2/g"]["compile_replaced"].iloc[0] == "add"  # the 2 h row: latest trusted, not last read
    dist = fusion.ops_per_kernel(df)
    cand = dist[dist["how"] == "replaced ops / own launches"]
    assert cand["ops"].tolist() == [2]  # only the trusted candidate (the wrong and the flagged one took 3 each)
    assert dist[dist["how"] == "kernel name"]["ops"].tolist() == [2, 2]  # the two trusted compile rows
    fig = charts.fusion_shares(t, df=df)  # shares from trusted rows only
    assert fig is not None
    with pytest.raises(data.NoData, match="trusted"):
        charts.fusion_shares(t[~t["trusted"]])


def test_failure_stages_of_strategies_and_malformed_profiles():
    df = frame([bad("level1/a", "verifier_rejected"), bad("level1/b", "strategy_error"),
                {**ok("level1/c", 2.0), "flags": ["profile_malformed: malformed fields in the run's profile (kernels)"]}])
    tax = failures.taxonomy(df)
    assert tax["stage"].tolist() == ["verifier", "strategy", "flagged"]
    assert tax["threats"].iloc[2] == ["#14-15 patched judge, harness tampering"]


def test_inductor_kernel_names():
    assert fusion.inductor_kernel_ops("triton_per_fused__softmax_div_0", ["aten::_softmax"]) == ["_softmax", "div"]
    assert fusion.inductor_kernel_ops("triton_red_fused_native_layer_norm_1", ["aten::native_layer_norm"]) == ["native_layer_norm"]
    assert fusion.inductor_kernel_ops("ampere_sgemm_128x64_nn") is None


def test_old_records_say_no_data_and_slow_table_still_works():
    df = frame([ok("level1/a", 0.8, n_kernels=3, custom_kernel_share=0.9), ok("level1/b", 2.0)])
    with pytest.raises(data.NoData, match="no record holds a profile"):
        fusion.fusion_table(df)
    slow = fusion.slower_than_eager(df)
    assert slow["problem"].tolist() == ["level1/a"] and slow["n_kernels"].iloc[0] == 3


# ---- scaling


def test_pass_at_k():
    assert scaling.pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert scaling.pass_at_k(4, 1, 4) == 1.0
    assert scaling.pass_at_k(4, 0, 2) == 0.0
    assert math.isnan(scaling.pass_at_k(2, 1, 3))


def test_best_of_k_refinement_evolution_verifier():
    rows = [ok("level1/a", 2.0, sample=0), bad("level1/a", "crash", sample=1), bad("level1/b", "crash", sample=0), bad("level1/b", "crash", sample=1)]
    bok = scaling.best_of_k(frame(rows))
    assert bok["fast_p"].tolist() == [pytest.approx(0.25), pytest.approx(0.5)]
    turns = frame([bad("level1/a", "crash", turn=0), ok("level1/a", 1.5, turn=1), bad("level1/b", "crash", turn=0), bad("level1/b", "crash", turn=1)])
    ref = scaling.refinement_curve(turns, p=1.0)
    assert ref["fast_p"].tolist() == [0.0, 0.5]
    evo = frame([bad("level1/a", "crash"), ok("level1/a", 2.0), ok("level1/b", 3.0)]).assign(generation=[0, 1, 1])
    prog = scaling.evolution_progress(evo)
    assert prog["solved"].tolist() == [0.0, 1.0] and prog["best_speedup_geomean"].iloc[1] == pytest.approx(math.sqrt(6))
    # a search that stopped after generation 0 keeps its best in later generations (no survivor bias)
    evo = frame([ok("level1/a", 1.0), ok("level1/b", 2.0), ok("level1/b", 4.0)]).assign(generation=[0, 0, 1])
    assert scaling.evolution_progress(evo)["best_speedup_geomean"].tolist() == [pytest.approx(math.sqrt(2)), pytest.approx(2.0)]
    ver = frame([ok("level1/a", 2.0), bad("level1/b", "crash"), ok("level1/c", 2.0)]).assign(verifier=["accept", "accept", "reject"])
    acc = scaling.verifier_accuracy(ver).iloc[0]
    assert (acc["tp"], acc["fp"], acc["fn"], acc["tn"]) == (1, 1, 1, 0) and acc["accuracy"] == pytest.approx(1 / 3)


def test_scaling_keeps_runs_and_devices_apart():
    # run r1: samples 0 and 1 crash; run r2: sample 0 correct, sample 1 crash -> n = 4, c = 1 for the model
    rows = [bad("level1/a", "crash", sample=0), bad("level1/a", "crash", sample=1),
            ok("level1/a", 2.0, sample=0, run_id="r2"), bad("level1/a", "crash", sample=1, run_id="r2")]
    bok = scaling.best_of_k(frame(rows))
    assert bok["k"].tolist()[:2] == [1, 2]
    assert bok["fast_p"].tolist()[:2] == [pytest.approx(0.25), pytest.approx(0.5)]
    # two refine runs of one model: two trajectories each, not one merged trajectory
    turns = frame([bad("level1/a", "crash", turn=0), ok("level1/a", 1.5, turn=1),
                   bad("level1/a", "crash", turn=0, run_id="r2"), bad("level1/a", "crash", turn=1, run_id="r2")]).assign(strategy="refine")
    ref = scaling.refinement_curve(turns)
    assert ref["fast_p"].tolist() == [0.0, 0.5] and ref["trajectories"].tolist() == [2, 2]
    # two evolve runs of one model: two searches of level1/a, one of them solved
    evo = frame([bad("level1/a", "crash"), ok("level1/a", 2.0), bad("level1/a", "crash", run_id="r2"),
                 bad("level1/a", "crash", run_id="r2")]).assign(generation=[0, 1, 0, 1])
    assert scaling.evolution_progress(evo)["solved"].tolist() == [0.0, 0.5]
    # one model on two devices: a curve each, never pooled
    two = frame([ok("level1/a", 2.0, sample=0), bad("level1/a", "crash", sample=1),
                 bad("level1/a", "crash", sample=0, device_name="GPU Y"), bad("level1/a", "crash", sample=1, device_name="GPU Y")])
    bok = scaling.best_of_k(two)
    assert {d: g["fast_p"].tolist() for d, g in bok.groupby("device_name")} == {"GPU X": [0.5, 1.0], "GPU Y": [0.0, 0.0]}


def test_scaling_says_no_data():
    df = frame([ok("level1/a", 2.0)])
    for fn, words in ((scaling.best_of_k, "one sample per problem"), (scaling.refinement_curve, "first turn"),
                      (scaling.evolution_progress, "generation"), (scaling.verifier_accuracy, "verifier"),
                      (scaling.variant_speedups, "variant_speedups")):
        with pytest.raises(data.NoData, match=words):
            fn(df)


def test_forward_backward_from_records_and_baselines():
    df = frame([ok("level1/1_Square_Matmul", 2.0), ok("robust/1_Linear_ReLU_Backward", 0.5)])
    b = pd.DataFrame({"problem": ["level1/1_Square_Matmul"] * 2, "mode": ["eager", "compile"], "runtime_ms": [2.0, 1.0],
                      "device_name": "GPU X", "failure": None})
    fb = scaling.forward_backward(df, b)
    assert set(fb["what"]) == {"m", "torch.compile baseline (GPU X)"}
    assert fb[fb["what"] == "torch.compile baseline (GPU X)"]["geomean_speedup"].iloc[0] == pytest.approx(2.0)


# ---- explorer (logic and panes; the browser test is tests/test_explorer_browser.py)


def test_explorer_filters_cascade_and_panes():
    df = frame([ok("level1/a", 2.0), bad("level1/b", "runtime_error", "ValueError: boom", sample=0), bad("level1/b", "crash", sample=1)])
    e = explorer.Explorer(df)
    assert "3 of 3" in e.count.value and "trusted" in e.panes["verdict"].value
    e.select(outcome="runtime_error")
    assert e.choices["problem"].value == "level1/b" and "ValueError: boom" in e.panes["verdict"].value
    e.select(outcome=explorer.ANY, problem="level1/b", sample=1)
    assert ">crash<" in e.panes["verdict"].value
    assert "No profile in this record" in e.panes["fusion"].value
    options, kept, rows = explorer.Selection.cascade(e.sel.df, {"problem": "nope"})
    assert kept["problem"] == "level1/a" and len(rows) == 1


def test_explorer_with_no_matching_rows():
    html = explorer.render(None)
    assert "No record matches" in html["verdict"]


# ---- records: the profile and source columns


def test_profile_and_source_columns_round_trip_and_old_files_read_null(tmp_path):
    import pyarrow.parquet as pq

    from kbench_lib.scoring.records import RecordWriter, read_records, row_from_verdict

    v = {"problem": "level1/a", "correct": True, "profile_ops": {"aten::mm": 1}, "reference_ops": {"aten::mm": 1, "aten::relu": 1},
         "profile_kernels": KERNELS, "reference_n_kernels": 2}
    RecordWriter(tmp_path, "new").append(row_from_verdict(v, run_id="new", model="m", extra={"candidate_source": "class ModelNew: ..."}))
    old = SCHEMA.empty_table().select([n for n in SCHEMA.names if not n.startswith(("profile_", "reference_", "candidate_", "problem_path"))])
    (tmp_path / "old" / "records").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"run_id": "old", "problem": "level1/b", "correct": False}], schema=old.schema),
                   tmp_path / "old" / "records" / "part-0.parquet")
    df = read_records(tmp_path).sort_values("run_id").reset_index(drop=True)
    new, older = df.iloc[0].to_dict(), df.iloc[1].to_dict()
    assert fusion.as_counts(new["reference_ops"]) == {"aten::mm": 1, "aten::relu": 1}
    assert fusion.as_kernels(new["profile_kernels"])[0]["name"] == "triton_poi_fused_add_relu_0"
    assert new["candidate_source"] == "class ModelNew: ..."
    assert older["reference_ops"] is None and fusion.as_kernels(older["profile_kernels"]) is None


def test_load_reads_a_committed_run_once_and_keeps_the_latest_local_row(tmp_path):
    import datetime as dt
    import subprocess

    from kbench_lib.scoring.records import RecordWriter

    results_dir = tmp_path / "results"  # a git checkout: the files git tracks are committed
    runs = results_dir / "runs"
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)

    def row(run_id, problem, correct, minutes):
        return {**GPU, **(ok(problem, 2.0) if correct else bad(problem, "crash")), "run_id": run_id, "timestamp": t0 + dt.timedelta(minutes=minutes)}

    RecordWriter(runs, "pub").append([row("pub", "level1/a", True, 0)])
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "add", "results/runs/pub"], cwd=tmp_path, check=True)  # published: tracked
    RecordWriter(runs, "mine").append([row("mine", "level1/b", False, 1)])
    RecordWriter(runs, "mine").append([row("mine", "level1/b", True, 2)])  # the same candidate judged again
    df = data.load(runs, committed_root=results_dir)
    local, comm = df[df["source"] == "local"], df[df["source"] == "committed"]
    assert list(comm["run_id"]) == ["pub"]
    assert "pub" not in set(local["run_id"])  # not a second time as a local run
    assert list(local["problem"]) == ["level1/b"] and bool(local["correct"].iloc[0])  # the latest row only


def test_committed_sources_are_found_and_checked_against_kernel_sha():
    df = data.load(local=False)
    from kbench_lib.analysis import sources

    # an offline model's source is re-derived and checked against the hash where the record does
    # not carry it (rows that predate the candidate_source column): shown on a reference row with its
    # carried source taken away
    ref = df[df["model"] == "reference"]
    assert len(ref)
    row = {**ref.iloc[0].to_dict(), "candidate_source": None}
    src = sources.candidate_source(row)
    assert src is not None and "ModelNew" in src
    carried = ref.iloc[0].get("candidate_source")
    if isinstance(carried, str) and carried:
        assert src == carried and sources.candidate_source(ref.iloc[0].to_dict()) == carried
    assert sources.candidate_source({**row, "kernel_sha": "0" * 16}) is None  # another hash: not guessed


def test_variant_speedups_table_and_generalisation_figure(tmp_path):
    from kbench_lib.analysis import figures

    over = dict(variant_speedups=[("v0", 1.5), ("v1", 0.5)])
    df = frame([ok("level1/a", 3.0, **over), ok("level1/b", 2.0), bad("level1/c", "crash", variant_speedups=[("v0", 9.0)])])
    t = scaling.variant_speedups(df)  # trusted records with per-variant timings only
    assert sorted(zip(t["variant"], t["speedup"])) == [("v0", 1.5), ("v1", 0.5)] and set(t["default_speedup"]) == {3.0}
    made = figures.scaling_figures(df, pd.DataFrame(), tmp_path)
    assert "variant_speedups_scatter" in made and all(p.exists() for p in made["variant_speedups_scatter"])
    cpu = frame([ok("level1/a", 3.0, device="cpu", small=True, **over)])  # CPU times: no kernel-speedup table or figure
    made = figures.scaling_figures(cpu, pd.DataFrame(), tmp_path / "cpu")
    assert "variant_speedups_scatter" not in made and "variant_speedups" not in made
    with pytest.raises(data.NoData, match="kernel-timed"):
        scaling.variant_speedups(cpu)
    both = frame([ok("level1/a", 3.0, **over), ok("level1/d", 5.0, device="cpu", variant_speedups=[("v0", 7.0)])])
    t = scaling.variant_speedups(both)  # the CPU row's times are left out of the table
    assert set(t["problem"]) == {"level1/a"} and 7.0 not in set(t["speedup"])


def test_strategy_records_feed_the_scaling_analyses():
    """Records as kbench_lib.strategies writes them: an evolve search numbers generations in turn and
    its verifiers' decisions sit in verify_decisions; refinement curves never count them as turns."""
    import pandas as pd

    from kbench_lib.analysis import scaling
    from kbench_lib.analysis.data import NoData

    df = pd.DataFrame({
        "model": ["tune"] * 4, "strategy": ["evolve+verify"] * 4, "problem": ["level1/a"] * 4, "sample": [0, 1, 2, 3],
        "turn": [0, 0, 1, 2], "correct": [True, False, True, True], "flags": [[], [], [], []],
        "verify_decisions": [[("culprit", "pass")], [("culprit", "fail")], [("culprit", "pass")], None],
    })
    assert list(scaling.with_generation(df)["generation"]) == [0, 0, 1, 2]
    assert list(scaling.with_verifier(df)["verifier"]) == [True, False, True, None]
    with pytest.raises(NoData):
        scaling.refinement_curve(df)


def test_each_problem_weighs_the_same_and_a_task_is_its_attempt():
    """Problem a sampled four times and b once count alike; a refine chain is its best turn and an
    evolve search its best proposal; strategies of one model are never averaged together."""
    uneven = frame([ok("level1/a", 2.0, sample=i) for i in range(4)] + [bad("level1/b", "crash")])
    h = results.headline(uneven, n_boot=50)
    assert h["fast_1"][0] == pytest.approx(0.5) and h["correct"][0] == pytest.approx(0.5)  # rows would say 0.8
    chain = frame([bad("level1/a", "crash", turn=0, strategy="refine"), ok("level1/a", 3.0, turn=1, strategy="refine"),
                   ok("level1/b", 1.5, turn=0, strategy="refine")])
    assert results.headline(chain, n_boot=50)["fast_0"][0] == pytest.approx(1.0)
    assert results.headline(chain, n_boot=50)["geomean_eager"][0] == pytest.approx(math.sqrt(3.0 * 1.5))
    search = frame([ok("level1/a", s, sample=i % 2, turn=i // 2, strategy="evolve") for i, s in enumerate([1.0, 1.2, 2.0, 0.5])])
    assert results.headline(search, n_boot=50)["geomean_eager"][0] == pytest.approx(2.0)
    mixed = frame([ok("level1/a", 2.0, strategy="single"), bad("level1/a", "crash", strategy="refine", run_id="r2")])
    t = results.results_table(mixed, by=("model", "level"), n_boot=20)
    assert sorted(t["model"]) == ["m [refine]", "m [single]"] and sorted(t["fast_0"]) == [0.0, 1.0]
