"""Any OpenAI-compatible chat-completions endpoint, through the official ``openai`` SDK.

OpenAI itself, vLLM, SGLang, Ollama, llama.cpp's server and hosted open-model APIs. Retries are
the SDK's own (``max_retries``: 408, 409, 429 and 5xx answers, connection errors and timeouts,
exponential backoff from 0.5 s to 8 s with jitter, honouring ``Retry-After``); ``timeout_s``
bounds each attempt. Against OpenAI's own endpoint the length limit is sent as
``max_completion_tokens`` (its reasoning models reject ``max_tokens``), elsewhere as ``max_tokens``
(what every compatible server reads).
"""
from __future__ import annotations

from .cache import Response
from .errors import MalformedResponse, MissingExtra, translate_sdk_error
from .spec import ModelSpec


class OpenAIProvider:
    name = "openai"
    default_concurrency = 8
    batched = False

    def __init__(self, spec: ModelSpec, timeout_s: float = 600.0, max_retries: int = 8):
        try:
            import openai
        except ImportError as e:
            raise MissingExtra("openai", "openai", "openai") from e
        self._sdk = openai
        self.spec = spec
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.where = f"the OpenAI-compatible server at {spec.base_url}" if spec.base_url else "OpenAI"
        self._key = spec.api_key()
        self._client = None

    def _get_client(self):
        # made inside the event loop that uses it
        if self._client is None:
            self._client = self._sdk.AsyncOpenAI(api_key=self._key, base_url=self.spec.base_url, timeout=self.timeout_s,
                                                 max_retries=self.max_retries)
        return self._client

    def request_arguments(self, messages: list[dict], params: dict) -> dict:
        args = {"model": self.spec.model, "messages": messages}
        for name, value in params.items():
            if name == "max_tokens" and not self.spec.base_url:
                name = "max_completion_tokens"
            args[name] = value
        return args

    async def complete(self, messages: list[dict], params: dict) -> Response:
        sdk = self._sdk
        try:
            r = await self._get_client().chat.completions.create(**self.request_arguments(messages, params))
        except sdk.OpenAIError as e:
            raise translate_sdk_error(sdk, e, self.where, self.spec.key_env, self.timeout_s, self.max_retries, (self._key,)) from None
        except ValueError as e:  # a body that is not JSON (json.JSONDecodeError) or not the expected shape
            raise MalformedResponse(f"{self.where} sent an answer that is not JSON: {e}") from None
        return self._response(r)

    def _response(self, r) -> Response:
        choices = getattr(r, "choices", None)
        if not isinstance(choices, list) or not choices or getattr(choices[0], "message", None) is None:
            raise MalformedResponse(f"{self.where} answered without a completion: {str(r)[:300]!r}")
        text = choices[0].message.content or ""
        usage = getattr(r, "usage", None)
        details = getattr(usage, "completion_tokens_details", None)
        return Response(
            text=text,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            reasoning_tokens=getattr(details, "reasoning_tokens", None),
            finish_reason=choices[0].finish_reason,
            extra={"served_model": getattr(r, "model", None)},
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
