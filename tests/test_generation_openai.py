"""The OpenAI-compatible provider over real HTTP: the official ``openai`` SDK, unchanged, talking
to the stand-in server (tests/llm_standin_server.py) on 127.0.0.1."""
from pathlib import Path

import pytest

pytest.importorskip("openai")

from standin import StandinServer, free_port  # noqa: E402

from kbench_lib.generation import CacheMiss, ProviderError, language_model  # noqa: E402
from kbench_lib.judging.pipeline import JudgeOptions  # noqa: E402
from kbench_lib.scoring.records import read_records  # noqa: E402
from kbench_lib.batch.runner import run_batch  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
GOOD = (FIXTURES / "candidates" / "scale_add_relu_triton.py").read_text()
ANSWER = f"<think>fuse the three ops</think>Here is the kernel:\n```python\n{GOOD}```\nIt fuses everything."
KEY = "sk-proj-" + "Zx9Qw3Er" * 6  # key-shaped, so that a leak would be found


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(**config):
        config.setdefault("default", ANSWER)
        servers.append(StandinServer(config, tmp_path))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


def _model(server_url, tmp_path, **options):
    options = {"cache_path": str(tmp_path / "cache.sqlite"), "max_retries": 3, "timeout_s": 10, "progress": False, **options}
    return language_model(f"openai[KBENCH_TEST_KEY]:standin-coder@{server_url}", options)


@pytest.fixture(autouse=True)
def test_key(monkeypatch):
    monkeypatch.setenv("KBENCH_TEST_KEY", KEY)


def test_samples_carry_candidates_and_metadata(serve, tmp_path, scale_add_relu):
    s = serve(require_key=KEY)
    with _model(s.openai_url, tmp_path, samples=3, temperature=0.4, max_tokens=1000, seed=7) as m:
        samples = m(scale_add_relu)
    assert [x.index for x in samples] == [0, 1, 2]
    assert all(x.candidate.source == GOOD and x.candidate.backend == "triton" and x.failure is None for x in samples)
    meta = samples[0].meta
    assert meta["prompt_tokens"] > 100 and meta["completion_tokens"] > 10 and meta["reasoning_tokens"] == 3
    assert meta["gen_latency_s"] > 0 and meta["gen_cached"] is False and len(meta["prompt_sha"]) == 64
    bodies = s.stats()["bodies"]
    assert sorted(b["seed"] for b in bodies) == [7, 8, 9]
    assert {(b["model"], b["temperature"], b["max_tokens"]) for b in bodies} == {("standin-coder", 0.4, 1000)}
    assert [m["role"] for m in bodies[0]["messages"]] == ["system", "user"] and "relu(a * self.scale + b)" in bodies[0]["messages"][1]["content"]


def test_retries_on_429_and_5xx(serve, tmp_path, scale_add_relu):
    s = serve(script=[{"status": 429, "retry_after_ms": 5}, {"status": 500, "retry_after_ms": 5}, {"status": 503, "retry_after_ms": 5}])
    with _model(s.openai_url, tmp_path, max_retries=4) as m:
        (sample,) = m(scale_add_relu)
    assert sample.candidate.source == GOOD
    assert s.stats()["statuses"] == [429, 500, 503, 200]


def test_server_errors_outlasting_the_retries_stop_the_model(serve, tmp_path, scale_add_relu):
    s = serve(always={"status": 502, "retry_after_ms": 5})
    with _model(s.openai_url, tmp_path, max_retries=2) as m, pytest.raises(ProviderError, match="status 502 after 2 retries"):
        m(scale_add_relu)
    assert s.stats()["statuses"] == [502, 502, 502]


def test_timeouts_are_retried_then_reported(serve, tmp_path, scale_add_relu):
    s = serve(script=[{"sleep": 3}])
    with _model(s.openai_url, tmp_path, timeout_s=0.5, max_retries=2) as m:
        assert m(scale_add_relu)[0].candidate.source == GOOD
    s = serve(always={"sleep": 3})
    with _model(s.openai_url, tmp_path, timeout_s=0.3, max_retries=1, cache_path=str(tmp_path / "other.sqlite")) as m:
        with pytest.raises(ProviderError, match="did not answer within 0.3 s"):
            m(scale_add_relu)


def test_malformed_and_empty_responses(serve, tmp_path, scale_add_relu):
    s = serve(script=[{"malformed": "<html>502 Bad Gateway</html>"}, {"no_choices": True}])
    with _model(s.openai_url, tmp_path) as m:
        assert m(scale_add_relu)[0].candidate.source == GOOD  # asked again: the third answer is good
    s = serve(always={"malformed": "not json"})
    with _model(s.openai_url, tmp_path, cache_path=str(tmp_path / "c2.sqlite")) as m, pytest.raises(ProviderError, match="not JSON"):
        m(scale_add_relu)
    s = serve(script=[{"content": None}], default="")
    with _model(s.openai_url, tmp_path, samples=2, cache_path=str(tmp_path / "c3.sqlite")) as m:
        samples = m(scale_add_relu)
    assert [x.failure for x in samples] == ["no_code", "no_code"] and all(x.candidate is None for x in samples)
    assert "empty" in samples[0].error


def test_bad_key_is_one_clear_error_without_the_key(serve, tmp_path, scale_add_relu, monkeypatch):
    s = serve(require_key="sk-the-right-one-0123456789")
    with _model(s.openai_url, tmp_path) as m, pytest.raises(ProviderError) as e:
        m(scale_add_relu)
    assert "KBENCH_TEST_KEY" in str(e.value) and "401" in str(e.value) and KEY not in str(e.value)
    assert s.stats()["statuses"] == [401]  # not retried


def test_unreachable_server(tmp_path, scale_add_relu):
    with _model(f"http://127.0.0.1:{free_port()}/v1", tmp_path, max_retries=1) as m, pytest.raises(ProviderError, match="cannot reach"):
        m(scale_add_relu)


def test_rate_limit_storm(serve, tmp_path, scale_add_relu, fixtures):
    from kbench_lib.suite.problems import load_problem

    linear = load_problem(fixtures / "problems" / "level1" / "2_Linear_GELU.py")
    s = serve(script=[{"status": 429, "retry_after_ms": 5}] * 24)
    with _model(s.openai_url, tmp_path, samples=4, concurrency=3, max_retries=12) as m:
        got = list(m.stream([scale_add_relu, linear]))
    assert sorted(p.key for p, _, _ in got) == sorted([scale_add_relu.key, linear.key])
    assert all(err is None and len(samples) == 4 and all(x.candidate for x in samples) for _, samples, err in got)
    statuses = s.stats()["statuses"]
    assert statuses.count(429) == 24 and statuses.count(200) == 8
    s = serve(always={"status": 429, "retry_after_ms": 5})
    with _model(s.openai_url, tmp_path, samples=4, max_retries=2, cache_path=str(tmp_path / "c2.sqlite")) as m:
        with pytest.raises(ProviderError, match="kept rate-limiting"):
            list(m.stream([scale_add_relu, linear]))


def _run(spec, problems, tmp_path, run_id, **generation):
    generation = {"cache_path": str(tmp_path / "cache.sqlite"), "max_retries": 1, "progress": False, **generation}
    return run_batch(problems, spec, run_id=run_id, runs_root=tmp_path / "runs", opts=JudgeOptions(device="cpu", timing=False),
                     progress=False, generation=generation)


def test_no_code_and_rejected_requests_are_records(serve, tmp_path, scale_add_relu):
    s = serve(script=[{"status": 400}], default="Sorry, I can only describe the idea: fuse the ops.")
    _, rows = _run(f"openai[KBENCH_TEST_KEY]:standin-coder@{s.openai_url}", [scale_add_relu], tmp_path, "r1", samples=2)
    by_failure = {r["failure"]: r for r in rows}
    assert set(by_failure) == {"no_code", "generation_error"}
    assert "describe the idea" in by_failure["no_code"]["message"] and by_failure["no_code"]["completion_tokens"] > 0
    assert "rejected the request (400)" in by_failure["generation_error"]["message"]
    df = read_records(tmp_path / "runs", "r1")
    assert sorted(df["failure"]) == ["generation_error", "no_code"] and df["prompt_sha"].notna().all()


def test_a_fatal_error_loses_nothing_and_a_rerun_resumes(serve, tmp_path, scale_add_relu, fixtures):
    from kbench_lib.suite.problems import load_problem

    linear = load_problem(fixtures / "problems" / "level1" / "2_Linear_GELU.py")
    s = serve(script=[{}, {"status": 401}], default="no code today")
    spec = f"openai[KBENCH_TEST_KEY]:standin-coder@{s.openai_url}"
    _run(spec, [scale_add_relu], tmp_path, "r2")
    with pytest.raises(ProviderError, match="refused the API key"):
        _run(spec, [scale_add_relu, linear], tmp_path, "r2", cache_mode="refresh")
    assert len(read_records(tmp_path / "runs", "r2")) == 1
    _, rows = _run(spec, [scale_add_relu, linear], tmp_path, "r2", cache_mode="refresh")
    assert [r["problem"] for r in rows] == [linear.key]
    assert s.stats()["statuses"] == [200, 401, 200]  # the recorded sample was never asked for again
    assert len(read_records(tmp_path / "runs", "r2")) == 2


def test_replay_without_network_is_bit_for_bit(serve, tmp_path, scale_add_relu):
    texts = [ANSWER, ANSWER.replace("BLOCK=1024", "BLOCK=512"), "no code"]
    s = serve(answers=[{"match": "relu(a * scale + b)", "texts": texts}])
    with _model(s.openai_url, tmp_path, samples=3, temperature=0.9) as m:
        live = m(scale_add_relu)
    s.stop()
    with _model(s.openai_url, tmp_path, samples=3, temperature=0.9, cache_mode="replay") as m:
        replayed = m(scale_add_relu)
    assert [(x.candidate.source if x.candidate else None, x.failure, x.error) for x in live] == \
           [(x.candidate.source if x.candidate else None, x.failure, x.error) for x in replayed]
    assert {x.meta["response_sha"] for x in live} == {x.meta["response_sha"] for x in replayed} and len({x.meta["response_sha"] for x in live}) == 3
    assert all(x.meta["gen_cached"] for x in replayed)
    with _model(s.openai_url, tmp_path, samples=4, temperature=0.9, cache_mode="replay") as m, pytest.raises(CacheMiss, match="sample 3"):
        m(scale_add_relu)
    with _model(s.openai_url, tmp_path, samples=1, temperature=0.2, cache_mode="replay") as m, pytest.raises(CacheMiss, match="temperature"):
        m(scale_add_relu)
    assert KEY.encode() not in (tmp_path / "cache.sqlite").read_bytes()


def test_concurrency_limit_holds_across_problems(serve, tmp_path, scale_add_relu, fixtures):
    from kbench_lib.suite.problems import load_problem

    linear = load_problem(fixtures / "problems" / "level1" / "2_Linear_GELU.py")
    s = serve(always={"sleep": 0.2})
    with _model(s.openai_url, tmp_path, samples=4, concurrency=3) as m:
        got = list(m.stream([scale_add_relu, linear]))
    assert sum(len(samples) for _, samples, _ in got) == 8
    assert s.stats()["max_in_flight"] == 3  # both problems' requests share the limit, and fill it
