"""Model specs: the strings ``--model`` and the notebooks take, parsed into a :class:`ModelSpec`.

Grammar (one spec names one model)::

    reference | torch-compile | folder:PATH          offline solvers (kbench_lib.generation.models)
    openai[ENV]:MODEL[@BASE_URL]                      any OpenAI-compatible chat-completions endpoint
    anthropic[ENV]:MODEL[@BASE_URL]                   Anthropic's messages API
    hf:PATH                                           a local Hugging Face checkpoint directory
    tune | tune:PATH                                  the offline autotuner (a search: kbench_lib.strategies)

- ``MODEL`` is sent as the request's model name unchanged; it may hold ``:`` (``qwen2.5-coder:7b``).
- ``@BASE_URL`` starts with ``http://`` or ``https://``: vLLM (``http://host:8000/v1``), SGLang,
  Ollama (``http://localhost:11434/v1``), llama.cpp's server, hosted open-model APIs. Without it
  the provider's own endpoint is used. A URL must not carry credentials (``user:pass@``) or a
  query string (``?key=...``): keys come from the environment only.
- ``[ENV]`` names the environment variable that holds the API key; the defaults are
  ``OPENAI_API_KEY`` and ``ANTHROPIC_API_KEY``. Example:
  ``openai[DEEPSEEK_API_KEY]:deepseek-chat@https://api.deepseek.com/v1``. When the variable is
  unset and a ``@BASE_URL`` is given, a placeholder key is sent (local servers ignore it); without a
  base URL an unset variable is an error naming the variable.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

PROVIDERS = ("openai", "anthropic", "hf")
DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
PLACEHOLDER_KEY = "no-key"  # what a keyless local server gets; never a secret


def is_tuner(model: str) -> bool:
    """Whether a model spec names the offline autotuner (``tune`` or ``tune:PATH``)."""
    return model == "tune" or model.startswith("tune:")


_HEAD_RE = re.compile(r"^(?P<provider>openai|anthropic|hf)(?:\[(?P<env>[A-Za-z_][A-Za-z0-9_]*)\])?:(?P<rest>.+)$")
_URL_SPLIT_RE = re.compile(r"@(?=https?://)")


class SpecError(ValueError):
    """A model spec that does not follow the grammar in this module's docstring."""


@dataclass(frozen=True)
class ModelSpec:
    provider: str  # "openai", "anthropic" or "hf"
    model: str  # the model name sent to the API, or the checkpoint path for hf
    base_url: str | None = None
    key_env: str | None = None  # the environment variable holding the key (API providers)

    def api_key(self) -> str:
        """The key from the environment, read at the moment of the call and never stored."""
        assert self.key_env is not None
        key = os.environ.get(self.key_env, "")
        if key:
            return key
        if self.base_url:
            return PLACEHOLDER_KEY
        raise SpecError(f"{self.provider}:{self.model} needs an API key: set the environment variable {self.key_env} "
                        f"(or name another one: {self.provider}[VAR]:{self.model})")


def is_language_model(text: str) -> bool:
    return bool(_HEAD_RE.match(text))


def parse_spec(text: str) -> ModelSpec:
    """Parse ``text`` (see the module docstring); raises :class:`SpecError` naming what is wrong."""
    m = _HEAD_RE.match(text.strip())
    if not m:
        raise SpecError(f"not a language-model spec: {text!r} (use openai[:ENV]:MODEL[@BASE_URL], anthropic:MODEL or hf:PATH)")
    provider, env, rest = m.group("provider"), m.group("env"), m.group("rest")
    if provider == "hf":
        if env:
            raise SpecError(f"hf:PATH takes no key variable: {text!r}")
        return ModelSpec("hf", rest)
    parts = _URL_SPLIT_RE.split(rest, maxsplit=1)
    model, base_url = parts[0], (parts[1] if len(parts) > 1 else None)
    if not model:
        raise SpecError(f"missing model name in {text!r}")
    if base_url is not None:
        url = urlsplit(base_url)
        if not url.hostname:
            raise SpecError(f"bad base URL in {text!r}")
        if url.username or url.password:
            raise SpecError(f"the base URL in a model spec must not carry credentials; put the key in an environment variable ({text.split('@')[0]}@...)")
        if url.query or url.fragment:  # ?key=... would travel into records, caches and plots with the spec
            raise SpecError(f"the base URL in a model spec must not carry a query string or fragment (keys come from an environment "
                            f"variable only): {text.split('@')[0]}@{url.scheme}://{url.netloc}{url.path}")
    return ModelSpec(provider, model, base_url, env or DEFAULT_KEY_ENV[provider])
