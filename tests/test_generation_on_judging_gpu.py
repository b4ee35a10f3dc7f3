"""A model that generates on the GPU the judge times on (``hf:``) does not overlap with judging:
the runner's decision and the generate-first order, checked on the CPU."""
from pathlib import Path
from types import SimpleNamespace

import pytest

from kbench_lib.generation.models import ModelUnavailable
from kbench_lib.batch.runner import _generated_first, generates_on


def _model(provider, device):
    return SimpleNamespace(provider=SimpleNamespace(name=provider, device=device))


def test_only_a_local_model_on_a_judging_gpu_stops_the_overlap():
    assert generates_on(_model("hf", "cuda"), ["cuda"])
    assert generates_on(_model("hf", "cuda"), ["cuda:0"])
    assert generates_on(_model("hf", "cuda:1"), ["cuda:0", "cuda:1"])
    assert not generates_on(_model("hf", "cuda:1"), ["cuda:0"])  # its own GPU
    assert not generates_on(_model("hf", "cpu"), ["cuda:0"])
    assert not generates_on(_model("hf", "cuda"), ["cpu"])
    assert not generates_on(_model("openai", None), ["cuda:0"])  # remote: nothing runs here
    assert not generates_on(object(), ["cuda:0"])  # offline models (folders, the tuner)


def test_generated_first_takes_every_answer_before_handing_one_on():
    log = []

    def arrivals():
        for i in range(3):
            log.append(f"generated {i}")
            yield i
        raise ModelUnavailable("gone")

    with pytest.raises(ModelUnavailable):
        for a in _generated_first(arrivals()):
            log.append(f"judged {a}")
    assert log == ["generated 0", "generated 1", "generated 2", "judged 0", "judged 1", "judged 2"]


def test_run_batch_generates_first_for_a_model_on_the_judging_gpu(monkeypatch, tmp_path):
    from kbench_lib.batch import runner

    seen = {}

    class Batch:
        def __init__(self, *args):
            pass

        def run(self, arrivals, done):
            seen["arrivals"] = arrivals
            return []

    monkeypatch.setattr(runner, "_Batch", Batch)
    monkeypatch.setattr(runner, "batch_devices", lambda opts, gpus: ["cuda:0"])
    for provider, first in (("hf", True), ("openai", False)):
        monkeypatch.setattr(runner, "get_model", lambda *a, p=provider: _model(p, "cuda"))
        runner.run_batch([], "hf:/some/checkpoint", run_id="r", runs_root=tmp_path, progress=False)
        assert (seen["arrivals"].__name__ == "_generated_first") == first


def test_a_search_takes_problems_one_at_a_time_with_such_a_model(monkeypatch, tmp_path):
    from kbench_lib.suite.problems import load_problem
    from kbench_lib.strategies import run as run_mod

    class Proposer:
        model = _model("hf", "cuda")

        def close(self):
            pass

    def no_pool(*a, **k):
        raise AssertionError("problems searched concurrently beside a model on the judging GPU")

    done = []
    monkeypatch.setattr(run_mod, "make_proposer", lambda *a, **k: Proposer())
    monkeypatch.setattr(run_mod, "resolve_device", lambda d: "cuda:0")
    monkeypatch.setattr(run_mod, "ThreadPoolExecutor", no_pool)
    monkeypatch.setitem(run_mod.STRATEGIES, "single", lambda search, samples=1: done.append(search.problem.key))
    problem = load_problem(Path(__file__).resolve().parent.parent / "problems" / "level2" / "2_Gemm_BiasAdd_ReLU_Square.py")
    run_mod.run_strategy([problem, problem], "hf:/x", "single", runs_root=tmp_path / "runs", cache_path=tmp_path / "c.sqlite",
                         progress=False, concurrency=2)
    assert len(done) == 2
