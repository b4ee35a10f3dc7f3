"""Generation and judging overlap, and a language model leaves nothing open behind it.

The stand-in server (tests/llm_standin_server.py) answers every request after ``latency_s``, one
request at a time (``concurrency=1``), so generation takes seconds; the official ``openai`` SDK
talks to it and the CPU judge judges the answers. The server records when each answer left, the
records when each verdict was written: the order of those times shows the overlap."""
import threading
import time

import pytest

pytest.importorskip("openai")

from standin import StandinServer  # noqa: E402
from test_generation_e2e import LINEAR_GOOD, SCALE_GOOD  # noqa: E402

from kbench_lib.generation import ProviderError, language_model  # noqa: E402
from kbench_lib.judging.pipeline import JudgeOptions  # noqa: E402
from kbench_lib.scoring.records import read_records  # noqa: E402
from kbench_lib.batch.runner import run_batch  # noqa: E402

SPEC = "openai[KBENCH_TEST_KEY]:standin-coder@{}"
SCALE_MATCH, LINEAR_MATCH = "relu(a * self.scale + b)", "F.gelu(self.linear(x))"


@pytest.fixture(autouse=True)
def test_key(monkeypatch):
    monkeypatch.setenv("KBENCH_TEST_KEY", "sk-overlap-0123456789")


@pytest.fixture
def linear(fixtures):
    from kbench_lib.suite.problems import load_problem

    return load_problem(fixtures / "problems" / "level1" / "2_Linear_GELU.py")


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(**config):
        servers.append(StandinServer(config, tmp_path))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


def _run(server, problems, tmp_path, run_id, **generation):
    generation = {"cache_path": str(tmp_path / "cache.sqlite"), "max_retries": 1, "progress": False, "concurrency": 1, **generation}
    return run_batch(problems, SPEC.format(server.openai_url), run_id=run_id, runs_root=tmp_path / "runs",
                     opts=JudgeOptions(device="cpu", timing=False), progress=False, generation=generation)


def _wait_for(condition, timeout_s: float = 10.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _threads_left(before: set) -> list[str]:
    # tqdm's monitor is one daemon thread per process, started by the first bar (any bar, anywhere)
    return [t.name for t in threading.enumerate() if t not in before and t.is_alive() and t.name != "tqdm_monitor"]


@pytest.mark.slow  # judges several candidates
def test_judging_starts_on_the_first_answer_while_the_model_still_generates(serve, tmp_path, scale_add_relu, linear):
    answers = [{"match": SCALE_MATCH, "texts": [SCALE_GOOD, "I would fuse the three ops."]}, {"match": LINEAR_MATCH, "texts": [LINEAR_GOOD]}]
    s = serve(answers=answers, latency_s=1.0, script=[{}, {}, {}, {"status": 400}])
    before = set(threading.enumerate())
    _, rows = _run(s, [scale_add_relu, linear], tmp_path, "overlap", samples=4)
    stats = s.stats()
    assert len(rows) == 8 and stats["requests"] == 8
    failures = sorted(r["failure"] or "-" for r in rows)  # the fourth request got a 400, one answer had no code
    assert failures == ["-"] * 6 + ["generation_error", "no_code"]  # each recorded, and the batch went on
    assert sum(bool(r["correct"]) for r in rows) == 6
    written = sorted(r["timestamp"].timestamp() for r in rows)
    first_request, last_answer = min(stats["arrived"]), max(stats["answered"])
    # the first verdict was written while answers were still coming (run serially, it could only follow the last)
    assert written[0] < last_answer
    # and the whole run took less than generating, then judging one after the other would have
    generating = last_answer - first_request
    judging = sum(r["judge_s"] for r in rows if r["judge_s"] is not None)
    assert written[-1] - first_request < generating + judging
    # one row per sample key, on disk as well; the model's client, event loop and pool are gone
    df = read_records(tmp_path / "runs", "overlap")
    assert len(df) == 8 and not df.duplicated(["model", "problem", "sample"]).any()
    assert _wait_for(lambda: s.stats()["open_connections"] == 0), s.stats()["open_connections"]
    assert _threads_left(before) == []


@pytest.mark.slow  # judges several candidates
def test_a_model_that_stops_keeps_what_was_generated_and_a_rerun_asks_only_for_the_rest(serve, tmp_path, scale_add_relu, linear):
    answers = [{"match": SCALE_MATCH, "texts": [SCALE_GOOD]}, {"match": LINEAR_MATCH, "texts": [LINEAR_GOOD]}]
    s = serve(answers=answers, latency_s=0.2, script=[{}, {}, {}, {"status": 401}])
    with pytest.raises(ProviderError, match="refused the API key"):
        _run(s, [scale_add_relu, linear], tmp_path, "stop", samples=3)
    kept = read_records(tmp_path / "runs", "stop")
    assert len(kept) == 3 and kept["correct"].all()  # the three answers before the 401 were judged and recorded
    asked = s.stats()["requests"]
    _, rows = _run(s, [scale_add_relu, linear], tmp_path, "stop", samples=3)
    assert len(rows) == 3 and s.stats()["requests"] - asked == 3  # only the three samples without a record were asked for
    df = read_records(tmp_path / "runs", "stop")
    assert sorted(zip(df["problem"], df["sample"])) == sorted((p.key, i) for p in (scale_add_relu, linear) for i in range(3))


def test_the_queue_of_answers_is_bounded(serve, tmp_path, scale_add_relu, linear):
    s = serve(default=SCALE_GOOD, latency_s=0.1)
    options = {"cache_path": str(tmp_path / "c.sqlite"), "samples": 4, "concurrency": 1, "queue_size": 2, "progress": False}
    with language_model(SPEC.format(s.openai_url), options) as m:
        arrivals = m.arrivals([scale_add_relu, linear])
        first = next(arrivals)
        time.sleep(1.5)  # 15 answers' worth of time, but nobody takes them
        assert s.stats()["requests"] <= 1 + 2 + 1  # the one taken, two waiting, at most one more asked as the first was taken
        rest = list(arrivals)
    got = [first, *rest]
    assert sorted((a.problem.key, a.sample.index) for a in got) == sorted((p.key, i) for p in (scale_add_relu, linear) for i in range(4))
    assert all(a.sample.candidate is not None for a in got)
    assert [a.problem.key for a in got if a.last] and sorted(a.problem.key for a in got if a.last) == sorted([scale_add_relu.key, linear.key])
    assert s.stats()["requests"] == 8


def test_close_releases_connections_and_threads(serve, tmp_path, scale_add_relu):
    s = serve(default=SCALE_GOOD)
    before = set(threading.enumerate())
    m = language_model(SPEC.format(s.openai_url), {"cache_path": str(tmp_path / "c.sqlite"), "samples": 2, "progress": False})
    assert len(m(scale_add_relu)) == 2
    assert s.stats()["open_connections"] >= 1 and "kbench-generation" in _threads_left(before)  # kept alive while the model is open
    m.close()
    m.close()  # twice is fine
    assert _wait_for(lambda: s.stats()["open_connections"] == 0)
    assert _threads_left(before) == []
    with pytest.raises(RuntimeError, match="closed"):
        m(scale_add_relu)


def test_leaving_the_arrivals_early_then_closing_leaves_nothing_running(serve, tmp_path, scale_add_relu, linear):
    s = serve(default=SCALE_GOOD, latency_s=0.3)
    before = set(threading.enumerate())
    with language_model(SPEC.format(s.openai_url), {"cache_path": str(tmp_path / "c.sqlite"), "samples": 4, "progress": False}) as m:
        for _ in m.arrivals([scale_add_relu, linear]):
            break
    assert _wait_for(lambda: s.stats()["open_connections"] == 0)
    assert _threads_left(before) == []


@pytest.mark.slow  # judges several candidates
def test_a_strategy_run_closes_its_models(serve, tmp_path, scale_add_relu):
    from kbench_lib.strategies.run import run_strategy

    s = serve(answers=[{"match": "VERDICT", "texts": ["Looks fine.\nVERDICT: PASS"]}], default=SCALE_GOOD)
    before = set(threading.enumerate())
    generation = {"cache_path": str(tmp_path / "c.sqlite"), "samples": 2, "progress": False, "max_retries": 1}
    _, rows = run_strategy([scale_add_relu], SPEC.format(s.openai_url), "verify", run_id="v", runs_root=tmp_path / "runs",
                           params={"samples": 2}, opts=JudgeOptions(device="cpu", timing=False), generation=generation, progress=False)
    assert len(rows) == 2 and all(r["correct"] for r in rows)
    assert s.stats()["requests"] == 2 + 2 * 3  # two proposals, each read by the three verifiers (their own model)
    assert _wait_for(lambda: s.stats()["open_connections"] == 0)
    assert _threads_left(before) == []


def test_a_caller_waiting_for_arrivals_is_released_when_the_requests_are_cancelled(tmp_path, scale_add_relu):
    import asyncio

    class Hanging:  # a provider that never answers
        batched, default_concurrency = False, 2

        async def complete(self, messages, params):
            await asyncio.sleep(3600)

        async def aclose(self):
            pass

    m = language_model(SPEC.format("http://127.0.0.1:9"), {"cache_path": str(tmp_path / "c.sqlite"), "samples": 2, "progress": False})
    m.provider = Hanging()
    arrivals, got = m.arrivals([scale_add_relu]), []

    def consume():
        try:
            got.append(next(arrivals))
        except BaseException as e:  # noqa: BLE001
            got.append(e)

    waiting = threading.Thread(target=consume, daemon=True)
    waiting.start()
    time.sleep(0.5)  # the caller waits on the queue, the requests hang
    m.close()  # cancels every task on the model's loop, the feeding one included
    waiting.join(10)
    assert not waiting.is_alive(), "the caller still waits for an arrival that never comes"
    assert isinstance(got[0], RuntimeError) and "cancelled" in str(got[0])
