"""benchmarks/evolve_solutions.py's bookkeeping (a run over several calls) and the gain-over-seed
metric and figure it draws. The search itself is tested in test_strategies_*.py."""
import importlib.util
import json
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

from kbench_lib.scoring.records import save_records
from kbench_lib.reports.search_metrics import seed_gain
from kbench_lib.reports.search_plots import seed_gain_plot

matplotlib.use("Agg")
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def evolve_solutions():
    spec = importlib.util.spec_from_file_location("evolve_solutions", REPO / "benchmarks" / "evolve_solutions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(problem="level1/x", runtimes=(1.0, 1.2, 0.9, 0.8), flagged=(3,), device="cuda"):
    return pd.DataFrame({
        "run_id": "evolve", "model": "tune", "strategy": "evolve", "problem": problem, "device": device, "small": False,
        "backend": "triton", "proposal": range(len(runtimes)), "proposal_id": [f"p{i}" for i in range(len(runtimes))],
        "correct": True, "flags": [["memoisation_suspected"] if i in flagged else [] for i in range(len(runtimes))],
        "runtime_ms": list(runtimes), "speedup_eager": [1.0 / r for r in runtimes], "judge_s": 2.0, "judged": True, "turn": 0, "sample": 0,
        "timestamp": pd.Timestamp("2026-11-26", tz="UTC"),
    })


def test_seed_gain_is_the_seed_time_over_the_best_trusted_time_so_far():
    curve = seed_gain(_rows())
    assert curve["proposals"].tolist() == [1, 2, 3, 4]
    # p1 is slower (the best stays the seed), p2 is faster, p3 faster still but flagged: not counted
    assert curve["gain"].tolist() == pytest.approx([1.0, 1.0, 1.0 / 0.9, 1.0 / 0.9])
    assert curve["gpu_s"].tolist() == [2.0, 4.0, 6.0, 8.0]


def test_seed_gain_without_a_trusted_seed_or_a_kernel_clock_is_not_a_gain():
    assert seed_gain(_rows(flagged=(0,)))["gain"].isna().all()
    assert seed_gain(_rows(device="cpu"))["gain"].isna().all()  # a CPU clock says nothing of a kernel's speed


def test_seed_gain_plot_marks_the_confirmed_problems():
    df = pd.concat([_rows("level1/a"), _rows("level1/b", runtimes=(1.0, 1.1))])
    fig = seed_gain_plot(df, {"level1/a": 1.105})
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["a (1.105x confirmed)", "b"]
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_a_run_resumed_keeps_its_records_and_its_finished_problems(evolve_solutions, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    save_records(_rows("level1/a"), out / "records.parquet")
    (out / "improvements.json").write_text(json.dumps({"calls": 1, "results": [{"problem": "level1/a", "improved": True}]}))

    class P:
        key = "level1/a"

    run = evolve_solutions.Run(out, "cpu", resume=True)
    assert run.calls == 2 and run.done(P) and len(run.records()) == 4
    report = run.save([P], complete=True)
    assert report["finished"] == 1 and report["improved"] == 1 and report["calls"] == 2

    fresh = evolve_solutions.Run(out, "cpu", resume=False)  # without --resume the folder starts empty
    assert fresh.calls == 1 and not fresh.done(P) and len(fresh.records()) == 0
    assert not (out / "records.parquet").exists()


def test_no_problem_is_started_that_the_call_cannot_finish(evolve_solutions, tmp_path, capsys):
    rc = evolve_solutions.main(["--device", "cpu", "--problems", "93_KLDiv", "--minutes", "0", "--out-dir", str(tmp_path), "--name", "t"])
    assert rc == 0
    assert "stopping before level1/93_KLDiv_PerSample" in capsys.readouterr().out
    report = json.loads(next(tmp_path.glob("*/t/improvements.json")).read_text())
    assert report["complete"] is False and report["problems"] == 1 and report["finished"] == 0


def test_the_gains_figure_is_drawn_for_tuner_searches_with_kernel_timings_only(tmp_path):
    from kbench_lib.strategies import workflow

    rows = _rows().assign(flags=[[] for _ in range(4)], strategy="evolve+verify")
    made = workflow.figures(rows, tmp_path / "gpu", confirmed={"level1/x": 1.25})
    assert {p.suffix for p in made["gains"]} == {".pdf", ".png"} and all(p.exists() for p in made["gains"])
    assert "gains" not in workflow.figures(rows.assign(device="cpu"), tmp_path / "cpu")  # an interpreter's clock: no gain to show
    assert "gains" not in workflow.figures(rows.assign(model="openai:some-model"), tmp_path / "lm")  # no seed to compare with


def test_an_extension_searches_only_promising_unimproved_problems_and_keeps_a_confirmation_it_already_has(evolve_solutions, tmp_path):
    a = evolve_solutions._args(["--extend-s", "30", "--extend-above", "1.003"])
    assert evolve_solutions._extendable({"improved": False, "search_speedup": 1.006}, a)
    assert not evolve_solutions._extendable({"improved": True, "search_speedup": 1.04}, a)  # improved already
    assert not evolve_solutions._extendable({"improved": False, "search_speedup": 1.001}, a)  # nothing found worth the time
    assert not evolve_solutions._extendable({"improved": False, "search_speedup": 1.006, "extended_s": 30}, a)  # once only
    assert not evolve_solutions._extendable({"improved": False, "search_speedup": float("nan")}, a)
    assert not evolve_solutions._extendable({"improved": False, "search_speedup": 1.006}, evolve_solutions._args([]))  # off by default

    from kbench_lib.generation.runs import select
    from kbench_lib.judging.pipeline import JudgeOptions

    (problem,) = select(None, None, ["level1/93_KLDiv_PerSample"])
    rows = _rows(problem.key, runtimes=(1.0, 1.2, 0.99), flagged=()).assign(strategy="evolve+verify")
    rows["knobs"] = [[("BLOCK@40.0", b)] for b in (2048, 1024, 512)]
    out = tmp_path / "run"
    out.mkdir()
    save_records(rows, out / "records.parquet")
    run = evolve_solutions.Run(out, "cuda", resume=True)
    before = {"problem": problem.key, "best_id": "p2", "confirm_ratios": [1.004, 1.005, 1.006], "confirm_speedup": 1.005,
              "confirm_every_pair_faster": True, "correct": True, "flags": [], "solution_trusted": True, "improved": False}
    entry = evolve_solutions.evaluate(problem, a, JudgeOptions(device="cuda"), run, tuner=None, previous=before)  # nothing is judged
    assert entry["best_id"] == "p2" and entry["confirm_ratios"] == [1.004, 1.005, 1.006] and entry["improved"] is False
    assert entry["search_speedup"] == pytest.approx(1 / 0.99) and entry["best_knobs_changed"] == {"BLOCK@40.0": [2048, 512]}


def test_a_cuda_solution_gets_its_own_search_time_generation_width_and_parallel_builds(evolve_solutions):
    from kbench_lib.generation.runs import select
    from kbench_lib.strategies import TunerProposer

    a = evolve_solutions._args(["--backends", "triton", "cuda", "--search-s", "50", "--cuda-search-s", "170", "--cuda-proposals", "6"])
    tuner = TunerProposer(backends=("triton", "cuda"))
    cuda_p, triton_p = select(None, None, ["83_ReverseCumsum"])[0], select(None, None, ["88_LogSoftmax"])[0]
    assert evolve_solutions.is_cuda(cuda_p, tuner) and not evolve_solutions.is_cuda(triton_p, tuner)
    assert evolve_solutions.search_seconds(cuda_p, a, tuner) == 170 and evolve_solutions.search_seconds(triton_p, a, tuner) == 50
    assert not evolve_solutions.is_cuda(cuda_p, None)  # no tuner (nothing judged): the default share
    a.build_jobs = 3
    assert evolve_solutions.build_jobs(a, "cuda") == 3
    a.build_jobs = None
    assert evolve_solutions.build_jobs(a, "cpu") == 0  # no CUDA backend runs on the CPU: Triton compiles in its worker
