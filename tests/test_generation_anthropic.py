"""The Anthropic provider over real HTTP: the official ``anthropic`` SDK, unchanged, talking to the
stand-in server (tests/llm_standin_server.py) on 127.0.0.1."""
from pathlib import Path

import pytest

pytest.importorskip("anthropic")

from standin import StandinServer, free_port  # noqa: E402

from kbench_lib.generation import CacheMiss, ProviderError, language_model  # noqa: E402

GOOD = (Path(__file__).parent / "fixtures" / "candidates" / "scale_add_relu_triton.py").read_text()
ANSWER = f"Fused:\n```python\n{GOOD}```"
KEY = "sk-ant-api03-" + "Tq4Wn8Ls2Kd6" * 7 + "-XyZ"


@pytest.fixture(autouse=True)
def test_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def _model(url, tmp_path, **options):
    options = {"cache_path": str(tmp_path / "cache.sqlite"), "max_retries": 3, "timeout_s": 10, "progress": False, **options}
    return language_model(f"anthropic:standin-claude@{url}", options)


def test_messages_api_samples_retries_and_metadata(tmp_path, scale_add_relu):
    script = [{"status": 429, "retry_after_ms": 5}, {"status": 529, "retry_after_ms": 5}]
    with StandinServer({"default": ANSWER, "require_key": KEY, "script": script}, tmp_path) as s:
        with _model(s.root, tmp_path, samples=2, temperature=0.3, max_tokens=2000, seed=1) as m:
            samples = m(scale_add_relu)
        stats = s.stats()
    assert all(x.candidate.source == GOOD and x.failure is None for x in samples)  # the thinking block is not the answer
    assert samples[0].meta["prompt_tokens"] > 100 and samples[0].meta["reasoning_tokens"] is None
    assert stats["statuses"] == [429, 529, 200, 200]
    body = stats["bodies"][-1]
    assert body["system"].startswith("You are an expert") and [m["role"] for m in body["messages"]] == ["user"]
    assert body["max_tokens"] == 2000 and body["temperature"] == 0.3 and "seed" not in body


def test_errors_end_clearly(tmp_path, scale_add_relu):
    with StandinServer({"default": ANSWER, "require_key": "sk-ant-other-0123456789"}, tmp_path) as s:
        with _model(s.root, tmp_path) as m, pytest.raises(ProviderError, match="ANTHROPIC_API_KEY") as e:
            m(scale_add_relu)
        assert KEY not in str(e.value) and s.stats()["statuses"] == [401]
    with StandinServer({"default": ANSWER, "always": {"sleep": 3}}, tmp_path) as s:
        with _model(s.root, tmp_path, timeout_s=0.3, max_retries=1) as m, pytest.raises(ProviderError, match="did not answer"):
            m(scale_add_relu)
    with StandinServer({"script": [{"malformed": "oops"}, {"no_choices": True}, {"content": None}], "default": ANSWER}, tmp_path) as s:
        with _model(s.root, tmp_path, cache_path=str(tmp_path / "c2.sqlite")) as m:
            (sample,) = m(scale_add_relu)
    assert sample.failure == "no_code" and "empty" in sample.error  # two unreadable answers asked again, then an empty one
    with _model(f"http://127.0.0.1:{free_port()}", tmp_path, max_retries=0) as m, pytest.raises(ProviderError, match="cannot reach"):
        m(scale_add_relu)


def test_replay_without_network(tmp_path, scale_add_relu):
    with StandinServer({"default": ANSWER}, tmp_path) as s:
        with _model(s.root, tmp_path, samples=2) as m:
            live = m(scale_add_relu)
    with _model(s.root, tmp_path, samples=2, cache_mode="replay") as m:
        replayed = m(scale_add_relu)
    assert [x.candidate.source for x in live] == [x.candidate.source for x in replayed]
    with _model(s.root, tmp_path, samples=2, cache_mode="replay", temperature=0.1) as m, pytest.raises(CacheMiss):
        m(scale_add_relu)
