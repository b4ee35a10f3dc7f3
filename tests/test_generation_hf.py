"""The ``hf:PATH`` provider: a tiny causal LM built here from a config, random weights, saved to a
temporary directory (no hub download), sampled through ``transformers``. Random weights write no
code, so every sample is a ``no_code`` record: the point is the code path (batched sampling,
token counts, cache, replay), not the answers."""
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from kbench_lib.generation import CacheMiss, language_model  # noqa: E402
from kbench_lib.generation.prompts import PromptOptions, build_messages  # noqa: E402


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory, request):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from kbench_lib.suite.problems import load_problem

    problem = load_problem(request.config.rootpath / "tests" / "fixtures" / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    words = sorted({w for m in build_messages(problem, PromptOptions()) for w in m["content"].split()})
    vocab = {w: i for i, w in enumerate(["[UNK]", "[PAD]", "[EOS]", *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    path = tmp_path_factory.mktemp("tiny-lm")
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]").save_pretrained(path)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=2, max_position_embeddings=4096, pad_token_id=1, eos_token_id=2, bos_token_id=2)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(path)
    return path


def _sample_and_replay(path, tmp_path, problem, device):
    options = {"samples": 3, "temperature": 1.0, "max_tokens": 24, "seed": 5, "cache_path": str(tmp_path / "c.sqlite"),
               "device": device, "progress": False}
    with language_model(f"hf:{path}", options) as m:
        live = m(problem)
    with language_model(f"hf:{path}", {**options, "cache_mode": "replay"}) as m:
        replayed = m(problem)
    assert [x.index for x in live] == [0, 1, 2]
    assert all(x.failure == "no_code" and x.candidate is None for x in live)
    assert all(x.meta["prompt_tokens"] > 500 and 0 < x.meta["completion_tokens"] <= 24 for x in live)
    assert len({x.meta["response_sha"] for x in live}) > 1  # sampled, not greedy
    assert [x.meta["response_sha"] for x in live] == [x.meta["response_sha"] for x in replayed]
    assert all(x.meta["gen_cached"] for x in replayed) and not any(x.meta["gen_cached"] for x in live)
    return live


def test_tiny_checkpoint_on_cpu(tiny_checkpoint, tmp_path, scale_add_relu):
    live = _sample_and_replay(tiny_checkpoint, tmp_path, scale_add_relu, "cpu")
    # the same seed gives the same batch again (refresh asks the model anew)
    options = {"samples": 3, "temperature": 1.0, "max_tokens": 24, "seed": 5, "cache_path": str(tmp_path / "c.sqlite"),
               "device": "cpu", "progress": False, "cache_mode": "refresh"}
    with language_model(f"hf:{tiny_checkpoint}", options) as m:
        assert [x.meta["response_sha"] for x in m(scale_add_relu)] == [x.meta["response_sha"] for x in live]
    with language_model(f"hf:{tiny_checkpoint}", {**options, "temperature": 0.0, "samples": 2, "cache_mode": "live"}) as m:
        greedy = m(scale_add_relu)
    assert greedy[0].meta["response_sha"] == greedy[1].meta["response_sha"]
    with language_model(f"hf:{tiny_checkpoint}", {**options, "max_tokens": 5000}) as m:
        rejected = m(scale_add_relu)
    assert rejected[0].failure == "generation_error" and "exceeds" in rejected[0].error
    with language_model(f"hf:{tiny_checkpoint}", {**options, "cache_mode": "replay", "seed": 6}) as m, pytest.raises(CacheMiss):
        m(scale_add_relu)


@pytest.mark.gpu
def test_tiny_checkpoint_on_gpu(tiny_checkpoint, tmp_path, scale_add_relu):
    _sample_and_replay(tiny_checkpoint, tmp_path, scale_add_relu, "cuda")


def test_arrivals_from_a_batched_checkpoint_and_close_stops_its_threads(tiny_checkpoint, tmp_path, scale_add_relu):
    import threading

    before = set(threading.enumerate())
    options = {"samples": 3, "temperature": 1.0, "max_tokens": 8, "seed": 5, "cache_path": str(tmp_path / "c.sqlite"), "device": "cpu",
               "progress": False}
    with language_model(f"hf:{tiny_checkpoint}", options) as m:
        got = list(m.arrivals([scale_add_relu], skip={(scale_add_relu.key, 1)}))
        assert any(t.name.startswith("asyncio_") for t in threading.enumerate())  # the batch ran on the loop's executor
    assert sorted(a.sample.index for a in got) == [0, 2] and [a.last for a in got] == [False, True]
    assert all(a.sample.failure == "no_code" for a in got)
    left = [t.name for t in threading.enumerate() if t not in before and t.is_alive() and t.name != "tqdm_monitor"]
    assert left == []
