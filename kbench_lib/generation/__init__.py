"""Generation: asking language models for candidates (providers, prompts, a record/replay cache).

Model specs (``--model`` and the notebooks' ``models``; full grammar in :mod:`.spec`)::

    openai:MODEL                       OpenAI, key from OPENAI_API_KEY
    openai:MODEL@BASE_URL              any OpenAI-compatible server (vLLM, SGLang, Ollama, llama.cpp, hosted APIs)
    openai[VAR]:MODEL@BASE_URL         the same, key from the environment variable VAR
    anthropic:MODEL                    Anthropic, key from ANTHROPIC_API_KEY ([VAR] and @BASE_URL work as above)
    hf:PATH                            a local Hugging Face checkpoint directory, sampled with transformers

Modules, in the direction data flows: :mod:`.spec` (the grammar), :mod:`.prompts` (+ ``templates/``),
:mod:`.cache` (SQLite record/replay, modes live/replay/refresh), :mod:`.openai_provider`,
:mod:`.anthropic_provider`, :mod:`.hf_provider` (each imports its SDK only when used; a missing one
names the extra to install), :mod:`.errors` (how each failure ends), :mod:`.parsing` (the code
block defining ``ModelNew``; none is the failure ``no_code``), :mod:`.pricing`,
:mod:`.event_loop`, :mod:`.language_model` (problem -> samples, concurrency, metadata).

Keys come from the environment only, are read when a provider is made and are never written to
records, caches or logs; the judge's sandbox removes them from the candidate's environment.
"""
from .cache import MODES as CACHE_MODES
from .cache import CacheMiss, ResponseCache
from .errors import GENERATION_ERROR, MissingExtra, ProviderError, RequestRejected
from .language_model import GenerationOptions, LanguageModel, language_model
from .parsing import NO_CODE, extract_code
from .prompts import PromptOptions, build_messages
from .spec import ModelSpec, SpecError, is_language_model, parse_spec

FAILURES = (NO_CODE, GENERATION_ERROR)

__all__ = [
    "CACHE_MODES", "CacheMiss", "ResponseCache", "GENERATION_ERROR", "MissingExtra", "ProviderError", "RequestRejected",
    "GenerationOptions", "LanguageModel", "language_model", "NO_CODE", "extract_code", "PromptOptions", "build_messages",
    "ModelSpec", "SpecError", "is_language_model", "parse_spec", "FAILURES",
]
