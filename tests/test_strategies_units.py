"""Strategies without the judge: estimators, scaling and verifier metrics on rows, the tuner's
knobs on every shipped solution, feedback text, verifier answers, selection."""
import ast
import math
from itertools import combinations
from pathlib import Path

import pandas as pd
import pytest

from kbench_lib.reports import search_metrics as sm
from kbench_lib.generation.models import Sample
from kbench_lib.strategies import FeedbackOptions, apply_config, feedback_text, find_knobs
from kbench_lib.strategies.evolve import elite
from kbench_lib.strategies.feedback import trim_log
from kbench_lib.strategies.search import Attempt, Request
from kbench_lib.strategies.tuner import TunerProposer
from kbench_lib.strategies.verifiers import CulpritVerifier, parse_verdict

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((REPO / "problems" / "solutions").glob("level*/*.py"))


@pytest.mark.parametrize("n,c,k", [(5, 0, 1), (5, 2, 1), (6, 2, 3), (7, 3, 7), (10, 1, 4), (4, 4, 2)])
def test_pass_at_k_is_the_share_of_k_subsets_with_a_success(n, c, k):
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(combinations(range(n), k))
    exact = sum(any(outcomes[i] for i in s) for s in subsets) / len(subsets)
    assert sm.estimate_pass_at_k(n, c, k) == pytest.approx(exact)
    with pytest.raises(ValueError):
        sm.estimate_pass_at_k(k - 1, 0, k)


def _rows(problem, outcomes, device="cuda:0", small=False):
    """Record-like rows: outcomes are (correct, speedup, flags)."""
    return [{"model": "m", "strategy": "single", "problem": problem, "sample": i, "turn": 0, "proposal": i, "correct": ok,
             "flags": flags, "failure": None if ok else "output_mismatch", "speedup_eager": s, "speedup_compile": None,
             "device": device, "small": small, "backend": "cuda", "judge_s": 2.0, "judged": True, "timestamp": i}
            for i, (ok, s, flags) in enumerate(outcomes)]


def test_pass_and_fast_p_at_k_average_problems_and_skip_short_ones():
    df = pd.DataFrame(_rows("a", [(True, 1.5, []), (False, None, []), (True, 0.8, []), (True, 3.0, ["library_passthrough: x"])])
                      + _rows("b", [(False, None, []), (True, 1.2, []), (False, None, []), (False, None, [])])
                      + _rows("c", [(True, 2.0, [])]))
    p1 = sm.pass_at_k(df, 1).iloc[0]
    assert p1["pass@1"] == pytest.approx((2 / 4 + 1 / 4 + 1.0) / 3) and p1["problems"] == 3
    p2 = sm.pass_at_k(df, 2).iloc[0]
    assert p2["problems"] == 2 and p2["problems_short"] == 1
    assert p2["pass@2"] == pytest.approx((sm.estimate_pass_at_k(4, 2, 2) + sm.estimate_pass_at_k(4, 1, 2)) / 2)
    f = sm.fast_p_at_k(df, 1.0, 1).iloc[0]  # the flagged 3.0x never counts
    assert f["fast_1@1"] == pytest.approx((1 / 4 + 1 / 4 + 1.0) / 3)
    cpu = pd.DataFrame(_rows("a", [(True, 9.0, [])], device="cpu"))
    assert math.isnan(sm.fast_p_at_k(cpu, 1.0, 1).iloc[0]["fast_1@1"])  # no kernel timing: not measured


def test_pass_at_k_takes_a_refine_chain_as_one_sample():
    """Turns of one chain are not samples drawn alike: a chain that failed twice and then passed is
    one passing sample (pass@1 1.0), not three samples of which one passed (1/3)."""
    rows = _rows("a", [(False, None, []), (False, None, []), (True, 1.5, [])])
    for r in rows:
        r.update(strategy="refine", sample=0, turn=r["turn"] + r["proposal"])
    assert sm.pass_at_k(pd.DataFrame(rows), 1).iloc[0]["pass@1"] == 1.0


def test_scaling_keeps_the_best_trusted_speedup_so_far():
    rows = _rows("a", [(False, None, []), (True, 1.2, []), (True, 5.0, ["faster_than_light: x"]), (True, 1.8, []), (True, 1.1, [])])
    rows[4]["judged"], rows[4]["failure"], rows[4]["correct"] = False, "verifier_rejected", False
    curve = sm.scaling(pd.DataFrame(rows))
    assert curve["best_speedup"].fillna(0).tolist() == [0, 1.2, 1.2, 1.8, 1.8]
    assert curve["judged"].tolist() == [1, 2, 3, 4, 4] and curve["gpu_s"].tolist() == [2, 4, 6, 8, 8]
    summary = sm.scaling_summary(curve, p=1.5)
    assert summary["fast_1.5"].tolist() == [0, 0, 0, 1, 1] and summary["fast_0"].tolist() == [0, 1, 1, 1, 1]


def test_verifier_confusion_against_the_judge():
    rows = _rows("a", [(False, None, []), (True, 1.0, []), (False, None, []), (True, 1.0, []), (False, None, [])])
    decisions = [("fail", "fail"), ("pass", "fail"), ("pass", "pass"), ("pass", "pass"), ("fail", "pass")]
    for r, (compile_, numerics), failure in zip(rows, decisions, ["compile_error", None, "output_mismatch", None, "compile_error"]):
        r["verify_decisions"] = [("compile", compile_), ("numerics", numerics)]
        r["failure"] = failure
    rows[4].update(judged=False, failure="verifier_rejected", judge_s=None)  # rejected, no ground truth
    c = sm.verifier_confusion(pd.DataFrame(rows)).set_index("verifier")
    assert (c.loc["compile", ["tp", "fp", "fn", "tn"]] == [1, 0, 1, 2]).all()
    assert c.loc["compile", "precision"] == 1.0 and c.loc["compile", "recall"] == 0.5 and c.loc["compile", "recall_own"] == 1.0
    assert (c.loc["any", ["tp", "fp", "fn", "tn"]] == [1, 1, 1, 1]).all()
    assert c.loc["compile", "saved_s"] == pytest.approx(2.0 + 2.0)  # measured 2 s, estimated 2 s for the unjudged one


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_solution_has_knobs_that_round_trip(path):
    source = path.read_text()
    knobs = find_knobs(source)
    assert knobs, f"no tunable constant found in {path.name}"
    config = {k.name: k.domain[(k.domain.index(k.value) + 1) % len(k.domain)] for k in knobs}
    changed = apply_config(source, knobs, config)
    ast.parse(changed)
    again = {k.name: k.value for k in find_knobs(changed)}
    assert again == config
    assert apply_config(source, knobs, {}) == source
    with pytest.raises(ValueError):
        apply_config(source, knobs, {knobs[0].name: 3})


def test_knobs_leave_formulas_and_unnamed_literals_alone():
    src = ('import triton\nx = 17\nBLOCK = max(32, n) if n <= 8192 else 4096\nwarps = n // 32 * 32\n'
           'k[(1,)](a, BLOCK=BLOCK, num_warps=8 if BLOCK >= 2048 else 4, num_stages=3)\n'
           'code = r"""\n__global__ void f() {}\nconst int threads = n >= 4096 ? 512 : (n + 31) / 32 * 32;\nk<<<g, 256, 0, s>>>();\n"""\n')
    found = {k.name: k.value for k in find_knobs(src)}
    assert found == {"BLOCK@3.0": 32, "threshold@3.0": 8192, "BLOCK@3.1": 4096, "num_warps@5.0": 8, "threshold@5.0": 2048,
                     "num_warps@5.1": 4, "num_stages@5.0": 3, "threshold@8.0": 4096, "threads@8.0": 512, "threads@9.0": 256}


def test_options_left_at_their_defaults_are_knobs_too():
    src = ("import triton\nimport triton.language as tl\n@triton.jit\ndef f(x, y, B: tl.constexpr):\n"
           "    a = tl.load(x + tl.arange(0, B), mask=None)\n"
           "    b = tl.load(y + tl.arange(0, B), eviction_policy='evict_first')\n"
           "    c = tl.load(\n        y,\n    )\n"
           "f[(1,)](x, y, B=128, num_warps=4)\nf[(1,)](x, y, B=128)\n")
    knobs = {k.name: k for k in find_knobs(src)}
    assert {n: k.value for n, k in knobs.items() if k.texts} == {"eviction@5.0": 0, "eviction@6.0": 1, "eviction@9.0": 0, "num_stages@10.0": 0}
    out = apply_config(src, list(knobs.values()), {"eviction@5.0": 2, "eviction@6.0": 0, "eviction@9.0": 1, "num_stages@10.0": 4})
    ast.parse(out)
    assert "tl.load(x + tl.arange(0, B), mask=None, eviction_policy=\"evict_last\")" in out
    assert "tl.load(y + tl.arange(0, B))" in out  # the solution's own policy can go
    assert "y,\n    eviction_policy=\"evict_first\")" in out  # after a trailing comma, no second comma
    assert "f[(1,)](x, y, B=128, num_warps=4, num_stages=4)" in out and out.endswith("f[(1,)](x, y, B=128)\n")
    assert apply_config(src, list(knobs.values()), {}) == src


def _problem(key="level2/2_Gemm_BiasAdd_ReLU_Square"):
    from kbench_lib.suite.problems import load_problem

    return load_problem(REPO / "problems" / f"{key}.py")


def _attempt(i, knobs, trusted, failure=None, op="sample", index=None, speedup=1.0):
    a = Attempt(f"p{i}", i, Request(op, 0, (), i if index is None else index), Sample(i, None, meta={"knobs": knobs}))
    a.observation = {"judged": True, "trusted": trusted, "failure": failure, "speedup_eager": speedup}
    return a


def test_tuner_proposes_new_legal_kernels_and_replays_them():
    problem = _problem()
    requests = [Request("sample", 0, (), i) for i in range(6)]
    first, second = TunerProposer().propose(problem, requests), TunerProposer().propose(problem, requests)
    assert [s.candidate.sha for s in first] == [s.candidate.sha for s in second]
    assert len({s.candidate.sha for s in first}) == 6
    assert first[0].candidate.source.split("\n", 1)[1] == (REPO / "problems/solutions/level2/2_Gemm_BiasAdd_ReLU_Square.py").read_text()
    knobs = {k.name: k for k in find_knobs(first[0].candidate.source.split("\n", 1)[1])}
    for s in first:
        ast.parse(s.candidate.source)
        assert all(v in knobs[name].domain for name, v in s.meta["knobs"].items())
    tuner = TunerProposer()
    seeds = tuner.propose(problem, requests[:2])
    parents = tuple(_attempt(i, s.meta["knobs"], True) for i, s in enumerate(seeds))
    kids = tuner.propose(problem, [Request("crossover", 1, parents, 0), Request("mutate", 1, parents[:1], 1)])
    assert all(k is not None for k in kids) and len({s.candidate.sha for s in [*seeds, *kids]}) == 4
    assert kids[0].meta["knobs"] not in [p.knobs for p in parents] and kids[1].meta["knobs"] != parents[0].knobs


def test_tuner_has_nothing_for_a_problem_without_a_seed(tmp_path):
    tuner = TunerProposer(seeds=tmp_path)
    assert not tuner.covers(_problem())
    assert tuner.propose(_problem(), [Request("sample", 0)])[0].failure == "no_code"


def test_culprit_verifier_learns_a_failing_setting():
    seed = {"a": 1, "b": 1}
    history = [_attempt(0, seed, True, index=0), _attempt(1, {"a": 2, "b": 1}, False, "compile_error"), _attempt(2, {"a": 1, "b": 4}, True)]
    new = [_attempt(3, {"a": 2, "b": 4}, False), _attempt(4, {"a": 1, "b": 8}, False)]
    d = CulpritVerifier().check(None, new, history)
    assert [x.passed for x in d] == [False, True] and "a=2" in d[0].reason and "p1" in d[0].reason


def test_parse_verdict_takes_the_last_verdict_line():
    assert parse_verdict("VERDICT: PASS maybe\nactually...\nVERDICT: FAIL: reads past the end") == (False, "reads past the end")
    assert parse_verdict("looks fine. verdict: pass") == (True, "")
    assert parse_verdict("no idea")[0] is None


def test_feedback_blocks_follow_the_options():
    obs = {"judged": True, "correct": False, "trusted": False, "failure": "compile_error", "message": "build failed",
           "error": "ninja: build stopped\nfoo.cu(3): error: identifier \"x\" is undefined\n  int y = x;\nmore noise",
           "runtime_ms": None, "flags": []}
    text = feedback_text(obs)
    assert "FAILED (compile_error)" in text and 'identifier "x" is undefined' in text and "int y = x;" in text
    assert "identifier" not in feedback_text(obs, FeedbackOptions(compile_log=False))
    fast = {"judged": True, "correct": True, "trusted": True, "failure": None, "runtime_ms": 0.5, "baseline_eager_ms": 1.0,
            "speedup_eager": 2.0, "sol_ms": 0.25, "device": "cuda:0", "small": False, "backend": "cuda", "n_kernels": 2,
            "custom_kernel_share": 0.75, "top_kernels": [["my_kernel", 0.75], ["sgemm", 0.25]], "flags": [], "max_abs_err": 1e-6}
    text = feedback_text(fast)
    assert "2x" in text and "50.0% of it" in text and "75.0%  my_kernel" in text
    assert "my_kernel" not in feedback_text(fast, FeedbackOptions.from_value("execution"))
    assert feedback_text(fast, "none") == "(no feedback)"
    assert len(trim_log("x\n" * 5000, 100)) <= 100


def test_elite_selects_trusted_by_speedup():
    pool = [_attempt(0, None, True, speedup=1.5), _attempt(1, None, False, "output_mismatch", speedup=9.0),
            _attempt(2, None, True, speedup=2.5), _attempt(3, None, True, speedup=1.5)]
    assert [a.id for a in elite(pool, 2)] == ["p2", "p0"]


class _StuckSearch:
    """A search whose proposals are never trusted: the elite (one seed) never changes."""

    def __init__(self, problem):
        self.problem, self.attempts, self.exhausted, self.requests = problem, [], False, []

    def ask(self, requests):
        made = []
        for r in requests:
            trusted = r.operation == "sample" and r.index == 0
            a = Attempt(f"p{len(self.attempts)}", len(self.attempts), r, Sample(r.index, None))
            a.observation = {"judged": True, "trusted": trusted, "speedup_eager": 1.0}
            self.attempts.append(a)
            made.append(a)
        self.requests.extend(requests)
        return made


def test_evolve_asks_new_requests_when_the_elite_does_not_change():
    from kbench_lib.strategies import evolve

    runs = []
    for _ in range(2):
        s = _StuckSearch(_problem())
        evolve.run(s, population=1, generations=3, proposals=2, crossover=0.0)
        runs.append([(r.operation, r.turn, tuple(p.id for p in r.parents), r.index) for r in s.requests])
    kids = [(op, parents, index) for op, _, parents, index in runs[0] if op in ("mutate", "crossover")]
    assert len(kids) == 6 and {parents for _, parents, _ in kids} == {("p0",)}
    assert len(set(kids)) == len(kids)  # same prompt (same parent): the index alone must tell them apart
    assert runs[0] == runs[1]  # and a search still replays


def test_scaling_summary_counts_a_problem_never_solved():
    rows = _rows("a", [(True, 2.0, [])]) + _rows("b", [(False, None, [])])
    s = sm.scaling_summary(sm.scaling(pd.DataFrame(rows)), p=1.0).iloc[0]
    assert s["fast_0"] == 0.5 and s["fast_1"] == 0.5  # b counts as not fast, not as absent
    assert s["geomean_best_speedup"] == pytest.approx(2.0)  # documented: an unsolved problem is left out of the geomean


def test_scaling_reports_no_speedup_from_cpu_or_interpreter_clocks():
    cpu = _rows("a", [(True, 4.9, [])], device="cpu") + _rows("b", [(True, 4.9, [])], device="cpu")
    for r in cpu[1:]:
        r["backend"] = "triton"  # Triton's interpreter on the CPU
    curve = sm.scaling(pd.DataFrame(cpu))
    assert curve["best_speedup"].isna().all() and curve["found"].all()
    s = sm.scaling_summary(curve, p=1.0).iloc[0]
    assert s["fast_0"] == 1.0  # trusted, whatever the clock
    assert math.isnan(s["fast_1"]) and math.isnan(s["geomean_best_speedup"])  # no kernel timing: not measured
    mixed = _rows("a", [(True, 2.0, [])]) + _rows("b", [(True, 9.0, [])], device="cpu")
    s = sm.scaling_summary(sm.scaling(pd.DataFrame(mixed)), p=1.0).iloc[0]
    assert s["fast_1"] == 0.5 and s["geomean_best_speedup"] == pytest.approx(2.0)  # the CPU row's 9x is left out


def _search_env(tmp_path, rows, judging=None):
    from kbench_lib.judging.pipeline import JudgeOptions
    from kbench_lib.strategies.observations import ObservationStore
    from kbench_lib.strategies.search import Judging, SearchEnv

    judging = judging or Judging(JudgeOptions(device="cpu"), "cpu")
    return SearchEnv(run_id="r", model="tune", strategy="single", proposer=TunerProposer(), judging=judging, write=rows.append,
                     store=ObservationStore(tmp_path / "c.sqlite", "live"))


def test_resume_reads_back_judge_errors_instead_of_judging_them_again(tmp_path):
    from kbench_lib.strategies import single
    from kbench_lib.strategies.search import Search

    problem, first = _problem(), []
    env = _search_env(tmp_path, first)
    env.judging._prepared[problem.key] = "the reference could not be prepared"  # every candidate: judge_error
    single.run(Search(problem, env), samples=2)
    assert [r["failure"] for r in first] == ["judge_error", "judge_error"] and all(r["kernel_sha"] for r in first)
    again = []
    env = _search_env(tmp_path, again, env.judging)
    search = Search(problem, env, {r["proposal_id"]: r for r in first})
    single.run(search, samples=2)
    assert again == [] and [a.row for a in search.attempts] == first


def test_resume_records_a_strategy_error_once(tmp_path, monkeypatch):
    from kbench_lib.judging.pipeline import JudgeOptions
    from kbench_lib.scoring.records import read_records
    from kbench_lib.strategies import run as run_mod

    def broken(search, samples: int = 1):
        raise RuntimeError("this search always breaks")

    monkeypatch.setitem(run_mod.STRATEGIES, "single", broken)
    kw = dict(runs_root=tmp_path / "runs", run_id="r", cache_path=tmp_path / "c.sqlite", progress=False,
              opts=JudgeOptions(device="cpu"))
    for _ in range(3):
        run_mod.run_strategy([_problem()], "tune", "single", **kw)
    df = read_records(tmp_path / "runs", "r")
    assert df["failure"].tolist() == ["strategy_error"] and "always breaks" in df["message"][0]


def test_a_build_that_raises_is_left_to_the_judge(monkeypatch):
    from concurrent.futures import Future, ThreadPoolExecutor

    from kbench_lib.judging.pipeline import JudgeOptions
    from kbench_lib.strategies import search as search_mod

    problem = _problem()
    samples = TunerProposer().propose(problem, [Request("sample", 0, (), i) for i in range(2)])

    def start_builds(cands, device, opts, workers):
        broken = Future()
        broken.set_exception(OSError("the sandbox could not start"))
        return ThreadPoolExecutor(1), {cands[0].sha: broken}

    monkeypatch.setattr(search_mod, "start_builds", start_builds)
    judging = search_mod.Judging(JudgeOptions(device="cpu"), "cpu", build_jobs=2)
    judging._prepared[problem.key] = "no reference here"  # the judge stops early: this test is about the build's error
    verdicts = judging.verdicts(problem, samples)
    assert [v.failure for v in verdicts] == ["judge_error", "judge_error"]


def test_one_failing_request_leaves_the_others_of_a_call(tmp_path, monkeypatch):
    pytest.importorskip("openai")
    from kbench_lib.generation import language_model
    from kbench_lib.generation.cache import Response

    class Provider:
        batched, default_concurrency = False, 4

        async def complete(self, messages, params):
            if "break" in messages[-1]["content"]:
                raise OSError("connection reset in the middle")
            return Response("```python\nclass ModelNew: pass\n```", 1, 1)

        async def aclose(self):
            pass

    monkeypatch.setenv("KBENCH_TEST_KEY", "sk-test-0123456789")
    model = language_model("openai[KBENCH_TEST_KEY]:m@http://127.0.0.1:9", {"cache_path": str(tmp_path / "c.sqlite"), "progress": False})
    model.provider = Provider()
    try:
        out = model.ask(_problem(), [([{"role": "user", "content": "fine"}], 0), ([{"role": "user", "content": "break"}], 1),
                                     ([{"role": "user", "content": "fine too"}], 2)])
    finally:
        model.close()
    assert [s.failure for s in out] == [None, "generation_error", None]
    assert out[0].candidate is not None and "OSError: connection reset" in out[1].error


def test_parallel_problems_stop_at_an_unavailable_model(tmp_path, monkeypatch):
    import threading
    import time

    from kbench_lib.judging.pipeline import JudgeOptions
    from kbench_lib.generation.models import ModelUnavailable
    from kbench_lib.strategies import run as run_mod

    started, lock = [], threading.Lock()

    def strategy(search, samples: int = 1):
        with lock:
            started.append(search.problem.key)
            first = len(started) == 1
        if first:
            raise ModelUnavailable("no key")
        time.sleep(0.3)

    monkeypatch.setitem(run_mod.STRATEGIES, "single", strategy)
    with pytest.raises(ModelUnavailable):
        run_mod.run_strategy([_problem()] * 8, "tune", "single", runs_root=tmp_path / "runs", cache_path=tmp_path / "c.sqlite",
                             progress=False, opts=JudgeOptions(device="cpu"), concurrency=2)
    assert len(started) <= 3  # the two first, maybe the one the failed worker took next; not the queued rest


def test_kbench_run_reports_a_refused_strategy_in_one_line(tmp_path, capsys):
    from kbench_lib.cli import main

    problems = tmp_path / "problems" / "level2"
    problems.mkdir(parents=True)
    (problems / "2_Gemm_BiasAdd_ReLU_Square.py").write_text((REPO / "problems/level2/2_Gemm_BiasAdd_ReLU_Square.py").read_text())
    code = main(["run", str(tmp_path / "problems"), "--model", "reference", "--verify", "compile", "--device", "cpu",
                 "--runs-root", str(tmp_path / "runs"), "--cache-path", str(tmp_path / "c.sqlite"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "kbench run: " in err and "need a language model" in err and "Traceback" not in err


def test_kbench_run_refuses_a_search_on_ray_in_one_line(tmp_path, capsys):
    from kbench_lib.cli import main

    problems = tmp_path / "problems" / "level2"
    problems.mkdir(parents=True)
    (problems / "2_Gemm_BiasAdd_ReLU_Square.py").write_text((REPO / "problems/level2/2_Gemm_BiasAdd_ReLU_Square.py").read_text())
    code = main(["run", str(tmp_path / "problems"), "--model", "tune", "--strategy", "evolve", "--ray", "auto", "--device", "cpu",
                 "--runs-root", str(tmp_path / "runs"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--ray runs plain batches" in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()


def test_the_tuner_proposes_no_configuration_that_launches_what_another_did():
    from kbench_lib.strategies.launches import launch_record

    problem = _problem("level1/88_LogSoftmax_Vocab")  # 5 of its 11 knobs change nothing at the timed size
    requests = [Request("sample", 0, (), i) for i in range(12)]

    def records(tuner):
        base, knobs = tuner.base(problem)
        return [launch_record(problem, apply_config(base.source, knobs, s.meta["knobs"])).key for s in tuner.propose(problem, requests) if s]

    plain = records(TunerProposer(dedupe=False))
    assert len(set(plain)) < len(plain)  # without the check some proposals run the kernels of another
    tuner = TunerProposer()  # the repository's solutions: checked by default
    checked = records(tuner)
    assert len(checked) == 12 and len(set(checked)) == 12 and tuner.same_kernel_skipped > 0
    assert TunerProposer(REPO / "problems" / "solutions").dedupe and not TunerProposer("/elsewhere").dedupe


def test_a_launch_record_sees_kernels_grids_constexprs_and_aten_calls():
    from kbench_lib.strategies.launches import launch_record

    problem = _problem()
    source = (REPO / "problems/solutions/level2/2_Gemm_BiasAdd_ReLU_Square.py").read_text()
    record = launch_record(problem, source)
    (launch,) = record.launches
    assert launch.kernel.startswith("_bias_relu_square#") and dict(launch.options)["BLOCK_N"] == 256 and dict(launch.options)["num_warps"] == 4
    assert any("mm" in op[0] for op in record.ops)
    wider = launch_record(problem, source.replace("BLOCK_M, BLOCK_N = 16, 256", "BLOCK_M, BLOCK_N = 16, 512"))
    assert wider.key != record.key and wider.launches[0].grid != launch.grid
    assert launch_record(problem, source.replace("def forward(self, x):", "def forward(self, x):\n        x.sum().item()")) is None  # data-dependent
    import torch

    touches_gpu = source.replace("def forward(self, x):", "def forward(self, x):\n        torch.cuda.current_stream()")
    assert launch_record(problem, touches_gpu) is None and not torch.cuda.is_initialized()


def test_a_search_on_the_cpu_says_it_compares_correctness_not_speed():
    import pandas as pd

    from kbench_lib import workflows
    from kbench_lib.strategies.workflow import improvements

    rows = pd.DataFrame({"model": "tune", "strategy": "evolve", "problem": "level1/p", "proposal": [0, 1], "proposal_id": ["a", "b"],
                         "device": "cpu", "small": True, "backend": "triton", "correct": True, "flags": [[], []],
                         "runtime_ms": [2.0, 1.0], "speedup_eager": [None, None], "knobs": [None, None]})
    note = workflows.timing_note(rows)
    assert "interpreter" in note and "comparing correctness, not speed" in note
    assert improvements(rows)["gain"].isna().all()  # two interpreter times are no gain
    assert "comparing correctness" not in workflows.timing_note(rows.drop(columns="proposal_id"))  # a plain batch is no search
