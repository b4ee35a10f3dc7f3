"""The models' registry (kbench_lib.generation.models): one entry per kind, read by every name that lists models."""
import pytest

from kbench_lib.generation import models
from kbench_lib.generation.corpus import FORMATS


@pytest.mark.parametrize("spec, usage", [
    ("reference", "reference"), ("torch-compile", "torch-compile"), ("eager", "eager"),
    ("folder:/some/where", "folder:<path>"), ("cuda-l1:h100.json", "cuda-l1:<path>"),
    ("openai:gpt-x@http://localhost:1/v1", models.LANGUAGE.usage), ("openai[MY_KEY]:m", models.LANGUAGE.usage),
    ("anthropic:claude-x", models.LANGUAGE.usage), ("hf:/models/ckpt", models.LANGUAGE.usage),
])
def test_every_spec_form_finds_its_kind(spec, usage):
    assert models.model_kind(spec).usage == usage and models.unknown_model(spec) is None


@pytest.mark.parametrize("spec", ["bogus", "folder:", "cuda-l1:", "Reference", "vllm:m"])
def test_anything_else_is_one_line_listing_every_kind(spec):
    why = models.unknown_model(spec)
    assert why.startswith(f"unknown model {spec!r}: use ") and "\n" not in why
    assert all(usage in why for usage in models.MODELS)
    with pytest.raises(ValueError, match="unknown model"):
        models.get_model(spec)


def test_the_tables_come_from_the_registry():
    assert set(FORMATS) <= set(models.PREFIXED)  # every corpus format the reader knows is a model
    assert models.ROLES == {"reference": "hand-written", "torch-compile": "compiler baseline", "eager": "clock control"}
    assert set(models.NOTES) == {"torch-compile", "eager"} and models.is_control("eager") and not models.is_control("reference")
    assert models.get_model("eager") is models.eager_model and models.get_model("torch-compile") is models.torch_compile_model
