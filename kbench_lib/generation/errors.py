"""What can go wrong when asking a model, and how each case ends.

- :class:`ProviderError` (a :class:`kbench_lib.generation.models.ModelUnavailable`): the model cannot answer
  at all: a bad or missing key (401/403), an unknown model (404), an unreachable server, rate
  limits, server errors or timeouts that outlasted every retry, answers that are not chat
  completions. The batch stops with this error; every verdict already recorded stays, and every
  response already received is in the cache, so running again with the same run id resumes.
- :class:`RequestRejected`: the server refused this one request (400/422: a prompt longer than
  the context window, say). The sample is recorded with the failure ``generation_error``.
- A response without code is not an error: its sample is recorded with the failure ``no_code``.

Messages are passed through :func:`redact` first: some servers quote part of a bad key back.
"""
from __future__ import annotations

import re

from .samples import ModelUnavailable

GENERATION_ERROR = "generation_error"
_KEYLIKE_RE = re.compile(r"\b(sk|pk|rk|hf|gsk|xai)[-_][A-Za-z0-9_\-*.]{8,}")


class ProviderError(ModelUnavailable):
    """The model could not answer; the batch stops (see the module docstring)."""


class RequestRejected(Exception):
    """The server refused one request; that sample is recorded as ``generation_error``."""


class MalformedResponse(Exception):
    """The server answered something that is not a completion (asked again, then a ProviderError)."""


class MissingExtra(ImportError):
    """An optional SDK is not installed; the message names the extra that installs it."""

    def __init__(self, provider: str, module: str, extra: str):
        super().__init__(f"the {provider} provider needs the '{module}' package: pip install 'kbench[{extra}]' "
                         f"(or pip install {module})")


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with each of ``secrets`` and anything shaped like an API key masked."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "[redacted]")
    return _KEYLIKE_RE.sub(lambda m: m.group(1) + "-[redacted]", text)


def translate_sdk_error(sdk, e: Exception, where: str, key_env: str | None, timeout_s: float, max_retries: int, secrets=()) -> Exception:
    """The error kbench raises for an exception of the official ``openai`` or ``anthropic`` SDK
    (they share one hierarchy of error classes), after the SDK's own retries were spent."""
    detail = redact(str(e), tuple(secrets))[:800]
    status = getattr(e, "status_code", None)
    if isinstance(e, (sdk.BadRequestError, sdk.UnprocessableEntityError)):
        return RequestRejected(f"{where} rejected the request ({status}): {detail}")
    if isinstance(e, (sdk.AuthenticationError, sdk.PermissionDeniedError)):
        return ProviderError(f"{where} refused the API key ({status}); the key comes from the environment variable "
                             f"{key_env}: {detail}")
    if isinstance(e, sdk.NotFoundError):
        return ProviderError(f"{where} answered 404 (is the model name or the base URL wrong?): {detail}")
    if isinstance(e, sdk.RateLimitError):
        return ProviderError(f"{where} kept rate-limiting (429) after {max_retries} retries with backoff: {detail}")
    if isinstance(e, sdk.APITimeoutError):
        return ProviderError(f"{where} did not answer within {timeout_s:g} s (attempts: {max_retries + 1})")
    if isinstance(e, sdk.APIConnectionError):
        return ProviderError(f"cannot reach {where} (attempts: {max_retries + 1}): {detail}")
    if isinstance(e, sdk.APIStatusError):
        return ProviderError(f"{where} failed with status {status} after {max_retries} retries: {detail}")
    return MalformedResponse(f"{where} sent an answer the SDK could not read: {type(e).__name__}: {detail}")
