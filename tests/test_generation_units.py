"""Generation pieces that need no server: spec grammar, parsing, cache, prompts, prices, redaction."""
import sqlite3

import pytest

from kbench_lib.generation import cache as cache_mod
from kbench_lib.generation.cache import CacheMiss, Response, ResponseCache, request_key
from kbench_lib.generation.errors import redact
from kbench_lib.generation.parsing import extract_code, no_code_message
from kbench_lib.generation.pricing import cost_usd, price_for
from kbench_lib.generation.prompts import PromptOptions, build_messages
from kbench_lib.generation.spec import SpecError, is_language_model, parse_spec
from kbench_lib.generation.models import ModelUnavailable, get_model

CODE = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def test_spec_grammar():
    s = parse_spec("openai:gpt-4o")
    assert (s.provider, s.model, s.base_url, s.key_env) == ("openai", "gpt-4o", None, "OPENAI_API_KEY")
    s = parse_spec("openai:qwen2.5-coder:7b@http://localhost:11434/v1")
    assert (s.model, s.base_url) == ("qwen2.5-coder:7b", "http://localhost:11434/v1")
    s = parse_spec("openai[DEEPSEEK_API_KEY]:deepseek-chat@https://api.deepseek.com/v1")
    assert (s.key_env, s.model) == ("DEEPSEEK_API_KEY", "deepseek-chat")
    assert parse_spec("anthropic:claude-sonnet-4-0").key_env == "ANTHROPIC_API_KEY"
    assert parse_spec("hf:/models/tiny").model == "/models/tiny"
    assert is_language_model("openai:x") and not is_language_model("reference") and not is_language_model("folder:/x")
    for bad in ("openai:", "gemini:x", "hf[K]:/p", "openai:m@http://user:pw@host/v1", "openai[1X]:m"):
        with pytest.raises(SpecError):
            parse_spec(bad)
    secret = "sk-" + "q" * 40  # a key in the query string would reach the records' model column
    for bad in (f"openai:m@https://host/v1?key={secret}", f"openai:m@https://host/v1#{secret}"):
        with pytest.raises(SpecError) as e:
            parse_spec(bad)
        assert secret not in str(e.value)


def test_api_key_comes_from_the_named_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SpecError, match="OPENAI_API_KEY"):
        parse_spec("openai:gpt-4o").api_key()
    assert parse_spec("openai:m@http://127.0.0.1:1/v1").api_key() == "no-key"  # a keyless local server
    monkeypatch.setenv("MY_KEY", "sk-abcdefghijkl")
    assert parse_spec("openai[MY_KEY]:m").api_key() == "sk-abcdefghijkl"


def test_unknown_model_names_the_grammar():
    with pytest.raises(ValueError, match="openai:MODEL"):
        get_model("gpt-4o")


def test_parsing_takes_the_last_block_defining_model_new():
    text = ("<think>maybe\n```python\nclass ModelNew: draft\n```\n</think>Plan:\n```python\nimport torch\n```\n"
            f"Final:\n```python\n{CODE}```\nand a test:\n```python\nprint(1)\n```")
    assert extract_code(text) == CODE
    assert extract_code(f"```py\n{CODE}```\n\n```Python\n{CODE.replace('x', 'y')}```") == CODE.replace("x", "y")
    assert extract_code(CODE) == CODE  # no fence: the whole answer when it parses
    assert extract_code("```cpp\nclass ModelNew {};\n```") is None  # not Python
    for nothing in (None, "", "I cannot help with that.", "```python\nimport torch\n```", "<think>```python\n" + CODE + "```"):
        assert extract_code(nothing) is None
    assert "empty" in no_code_message("") and "cannot help" in no_code_message("I cannot help")


def test_cache_modes(tmp_path):
    req = {"provider": "openai", "model": "m", "messages": [{"role": "user", "content": "hi"}], "params": {"temperature": 0.5}, "sample": 3}
    key = request_key(**req)
    assert key == request_key(**{**req, "params": {"temperature": 0.5}})
    assert key != request_key(**{**req, "sample": 4}) and key != request_key(**{**req, "params": {"temperature": 0.6}})
    path = tmp_path / "c.sqlite"
    live = ResponseCache(path, "live")
    assert live.lookup(key, req, "level1/1_X") is None
    live.put(key, req, Response("answer", 10, 5, 2, 0.25, "stop"))
    assert live.lookup(key, req, "level1/1_X").text == "answer"
    assert ResponseCache(path, "refresh").lookup(key, req, "level1/1_X") is None
    replay = ResponseCache(path, "replay")
    assert replay.lookup(key, req, "p") == Response("answer", 10, 5, 2, 0.25, "stop")
    other = {**req, "sample": 4}
    with pytest.raises(CacheMiss, match=r"openai:m on level1/1_X, sample 4") as e:
        replay.lookup(request_key(**other), other, "level1/1_X")
    assert isinstance(e.value, ModelUnavailable)
    rows = sqlite3.connect(path).execute("SELECT provider, model, sample FROM responses").fetchall()
    assert rows == [("openai", "m", 3)]
    with pytest.raises(ValueError):
        ResponseCache(path, "sometimes")


def test_prompt_blocks_switch(scale_add_relu):
    full = build_messages(scale_add_relu, PromptOptions(backend="cuda", hardware="h100-sxm", precision="bf16"))
    assert [m["role"] for m in full] == ["system", "user"]
    text = full[1]["content"]
    assert "load_inline" in text and "silu_add_kernel<<<" in text  # the CUDA worked example
    assert scale_add_relu.source.strip() in text
    assert "variant0: N=1023, M=3001" in text and "bfloat16" in text and "3.35 TB/s" in text
    bare = build_messages(scale_add_relu, PromptOptions(backend="triton", example=False, shapes=False))[1]["content"]
    assert "@triton.jit" in bare and "silu_add" not in bare and "variant0" not in bare and "Target hardware" not in bare
    small = build_messages(scale_add_relu, PromptOptions(backend="cpp", small=True))[1]["content"]
    assert "small_variant0: N=7, M=33" in small and "std::exp" in small
    with pytest.raises(ValueError):
        PromptOptions(backend="opencl")


def test_backward_tasks_ask_for_gradients():
    from kbench_lib.suite.problems import discover

    robust = [p for p in discover(cache_mod.DEFAULT_PATH.parents[2] / "problems" / "robust") if p.task == "backward"]
    text = build_messages(robust[0], PromptOptions())[1]["content"]
    assert "gradients" in text and "autograd" in text


def test_prices_and_redaction():
    assert price_for("gpt-4o-mini-2024-07-18") == (0.15, 0.60) and price_for("my-local-model") is None
    assert cost_usd("gpt-4o", 1_000_000, 100_000) == pytest.approx(2.5 + 1.0)
    assert cost_usd("local", 10, 10, prices={"local": (1.0, 1.0)}) == pytest.approx(2e-5)
    key = "sk-proj-" + "a1B2" * 12
    text = redact(f"Incorrect API key provided: {key}. Also sk-ant-api03-XyZ***789 and task-force", (key,))
    assert key not in text and "XyZ" not in text and "task-force" in text


def test_a_missing_sdk_names_its_extra(monkeypatch):
    import sys

    from kbench_lib.generation import MissingExtra

    monkeypatch.setitem(sys.modules, "anthropic", None)  # import anthropic now raises ImportError
    with pytest.raises(MissingExtra, match=r"kbench\[anthropic\]"):
        get_model("anthropic:claude-x@http://127.0.0.1:9/")


def test_generation_columns_join_the_record_without_overriding_the_verdict():
    from kbench_lib.scoring.records import SCHEMA, row_from_verdict

    row = row_from_verdict({"problem": "level1/1_X", "failure": "no_code"}, run_id="r", model="m",
                           extra={"prompt_tokens": 12, "gen_cached": True, "failure": "overridden?", "api_key": "sk-nope-0123456789"})
    assert row["prompt_tokens"] == 12 and row["gen_cached"] is True and row["failure"] == "no_code" and "api_key" not in row
    start = SCHEMA.names.index("prompt_sha")  # later columns may follow: the schema only gains columns
    assert SCHEMA.names[start:start + 8] == ["prompt_sha", "response_sha", "prompt_tokens", "completion_tokens", "reasoning_tokens",
                                 "gen_latency_s", "gen_cost_usd", "gen_cached"]
