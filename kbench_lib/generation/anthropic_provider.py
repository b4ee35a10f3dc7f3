"""Anthropic's messages API, through the official ``anthropic`` SDK.

The system message goes in ``system``; ``max_tokens`` is required by the API. ``temperature`` and
``top_p`` travel in the request body as the API defines them (``extra_body``: recent SDKs no longer
take them as arguments, and some recent models reject them: set the temperature to None, or
``--temperature none``, for those). The text of every
``text`` block is the response; ``thinking`` blocks (extended thinking) are reasoning and are not
searched for code. Retries are the SDK's own (``max_retries``: 408, 409, 429, 5xx and 529
answers, connection errors and timeouts, exponential backoff honouring ``Retry-After``).
"""
from __future__ import annotations

from .cache import Response
from .errors import MalformedResponse, MissingExtra, translate_sdk_error
from .spec import ModelSpec


class AnthropicProvider:
    name = "anthropic"
    default_concurrency = 4
    batched = False

    def __init__(self, spec: ModelSpec, timeout_s: float = 600.0, max_retries: int = 8):
        try:
            import anthropic
        except ImportError as e:
            raise MissingExtra("anthropic", "anthropic", "anthropic") from e
        self._sdk = anthropic
        self.spec = spec
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.where = f"the Anthropic-compatible server at {spec.base_url}" if spec.base_url else "Anthropic"
        self._key = spec.api_key()
        self._client = None

    def _get_client(self):
        if self._client is None:
            self._client = self._sdk.AsyncAnthropic(api_key=self._key, base_url=self.spec.base_url, timeout=self.timeout_s,
                                                    max_retries=self.max_retries)
        return self._client

    def request_arguments(self, messages: list[dict], params: dict) -> dict:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        args = {"model": self.spec.model, "messages": [m for m in messages if m["role"] != "system"],
                "max_tokens": params.get("max_tokens", 8192)}
        sampling = {k: params[k] for k in ("temperature", "top_p") if k in params}  # the messages API has no seed
        if sampling:
            args["extra_body"] = sampling
        if system:
            args["system"] = system
        return args

    async def complete(self, messages: list[dict], params: dict) -> Response:
        sdk = self._sdk
        try:
            r = await self._get_client().messages.create(**self.request_arguments(messages, params))
        except sdk.AnthropicError as e:
            raise translate_sdk_error(sdk, e, self.where, self.spec.key_env, self.timeout_s, self.max_retries, (self._key,)) from None
        except ValueError as e:  # a body that is not JSON (json.JSONDecodeError) or not the expected shape
            raise MalformedResponse(f"{self.where} sent an answer that is not JSON: {e}") from None
        return self._response(r)

    def _response(self, r) -> Response:
        content = getattr(r, "content", None)
        if not isinstance(content, list):
            raise MalformedResponse(f"{self.where} answered without message content: {str(r)[:300]!r}")
        text = "".join(getattr(b, "text", "") or "" for b in content if getattr(b, "type", None) == "text")
        usage = getattr(r, "usage", None)
        return Response(
            text=text,
            prompt_tokens=getattr(usage, "input_tokens", None),
            completion_tokens=getattr(usage, "output_tokens", None),
            finish_reason=getattr(r, "stop_reason", None),
            extra={"served_model": getattr(r, "model", None)},
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
