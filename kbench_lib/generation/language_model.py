"""A language model as a kbench model: a problem in, judged-ready :class:`Sample`s out.

For each problem: the prompt (:mod:`.prompts`), ``samples`` requests that differ only in their
sample index (and seed, when one is set), each answered from the cache (:mod:`.cache`) or by the
provider, the candidate taken out of each response (:mod:`.parsing`). Requests run concurrently
on a private event loop, at most ``concurrency`` at a time per model (default: the provider's),
across problems as well when the runner asks for many at once (:meth:`LanguageModel.stream`, whole
problems; :meth:`LanguageModel.arrivals`, one sample at a time through a bounded queue, for a
runner that judges while the model generates).
Every sample carries its generation metadata (``Sample.meta``: prompt and response hashes, token
counts, latency, cost estimate, whether the cache answered), which the runner puts in its record.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import time
from dataclasses import dataclass, field

from tqdm.auto import tqdm

from ..core.candidates import Candidate, detect_backend
from .samples import ModelUnavailable, Sample
from ..suite.problems import Problem
from .cache import DEFAULT_PATH, Response, ResponseCache, canonical, request_key, sha256
from .errors import GENERATION_ERROR, MalformedResponse, ProviderError, RequestRejected
from .event_loop import EventLoopThread
from .parsing import NO_CODE, extract_code, no_code_message
from .pricing import cost_usd
from .prompts import PromptOptions, build_messages
from .spec import ModelSpec, parse_spec

MALFORMED_ATTEMPTS = 3  # an answer that is not a completion is asked for again, this many times in all


@dataclass(frozen=True)
class GenerationOptions:
    """How a language model is asked. Everything that changes an answer (sampling parameters and
    prompt) is part of the cache key; the rest (concurrency, timeouts, retries) is not."""

    samples: int = 1
    temperature: float | None = 0.7  # None: not sent (the server's default)
    max_tokens: int = 8192
    top_p: float | None = None
    seed: int | None = None  # sample i is sent seed + i (servers that honour it give reproducible samples)
    prompt: PromptOptions = field(default_factory=PromptOptions)
    cache_mode: str = "live"  # live, replay or refresh (see .cache)
    cache_path: str | None = None  # default results/cache/generation.sqlite
    concurrency: int | None = None  # requests in flight at once; default the provider's
    queue_size: int | None = None  # answers that may wait for a runner that judges as they arrive; default 2 x concurrency
    timeout_s: float = 600.0  # per attempt
    max_retries: int = 8  # the SDK's retries on 408/409/429/5xx, connection errors and timeouts
    prices: dict | None = None  # extra USD-per-million-token prices: {model: (input, output)}
    device: str | None = None  # hf: where the checkpoint runs (default cuda when there is a GPU)
    progress: bool = True

    @classmethod
    def from_value(cls, value) -> "GenerationOptions":
        """Options from None, an instance, or a dict of fields (``prompt`` may itself be a dict)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        value = dict(value)
        if isinstance(value.get("prompt"), dict):
            value["prompt"] = PromptOptions(**value["prompt"])
        return cls(**value)

    def sampling_params(self, index: int) -> dict:
        params = {"temperature": self.temperature, "max_tokens": self.max_tokens, "top_p": self.top_p,
                  "seed": None if self.seed is None else self.seed + index}
        return {k: v for k, v in params.items() if v is not None}


def make_provider(spec: ModelSpec, o: GenerationOptions):
    if spec.provider == "openai":
        from .openai_provider import OpenAIProvider

        return OpenAIProvider(spec, o.timeout_s, o.max_retries)
    if spec.provider == "anthropic":
        from .anthropic_provider import AnthropicProvider

        return AnthropicProvider(spec, o.timeout_s, o.max_retries)
    from .hf_provider import HFProvider

    return HFProvider(spec.model, o.device)


class LanguageModel:
    """``generate(problem) -> list[Sample]`` for a language model (see the module docstring)."""

    def __init__(self, spec: str, options: GenerationOptions | None = None):
        self.name = spec
        self.spec = parse_spec(spec)
        self.options = options or GenerationOptions()
        self.provider = make_provider(self.spec, self.options)
        self.cache = ResponseCache(self.options.cache_path or DEFAULT_PATH, self.options.cache_mode)
        self._loop = EventLoopThread()
        self._closed = False
        self._limit = asyncio.Semaphore(self.options.concurrency or self.provider.default_concurrency)

    def __call__(self, problem: Problem) -> list[Sample]:
        return self._loop.run(self.problem_samples(problem, range(self.options.samples)))

    def stream(self, problems: list[Problem], skip=frozenset()):
        """(problem, samples, error) as each problem's samples are ready, all problems asked at
        once (bounded by the concurrency limit); (problem key, index) pairs in ``skip`` are not
        asked for. A :class:`ModelUnavailable` cancels what is still in flight and is raised."""
        futures = {}
        for p in problems:
            wanted = [i for i in range(self.options.samples) if (p.key, i) not in skip]
            if wanted:
                futures[self._loop.submit(self.problem_samples(p, wanted))] = p
        bar = tqdm(total=len(futures), desc=f"generating ({self.name})", unit="problem", disable=not self.options.progress)
        try:
            for f in concurrent.futures.as_completed(futures):
                bar.update()
                try:
                    yield futures[f], f.result(), None
                except ModelUnavailable:
                    raise
                except Exception as e:  # noqa: BLE001 - one problem's failure is that problem's record
                    yield futures[f], [], f"{type(e).__name__}: {e}"
        finally:
            bar.close()
            for f in futures:
                f.cancel()

    def arrivals(self, problems: list[Problem], skip=frozenset()):
        """Each sample as it is answered, all problems asked at once (see :mod:`.arrivals`)."""
        from .arrivals import stream_arrivals

        return stream_arrivals(self, problems, skip)

    async def problem_samples(self, problem: Problem, indices) -> list[Sample]:
        messages = build_messages(problem, self.options.prompt)
        if self.provider.batched:
            return await self._batched_samples(problem, messages, list(indices))
        return list(await asyncio.gather(*(self._one_sample(problem, messages, i) for i in indices)))

    def _request(self, messages: list[dict], index: int) -> tuple[str, dict]:
        request = {"provider": self.spec.provider, "model": self.spec.model, "messages": messages,
                   "params": self.options.sampling_params(index), "sample": index}
        return request_key(**request), request

    def ask(self, problem: Problem, prompts: list[tuple[list[dict], int]]) -> list[Sample]:
        """Samples for messages a strategy built itself (a refinement turn, an evolutionary
        proposal): ``[(messages, sample index)]`` in, one :class:`Sample` each out, asked
        concurrently, through the cache like every request."""
        return self._loop.run(self._ask_all(problem, prompts))

    def respond(self, prompts: list[tuple[list[dict], int]], what: str) -> list[tuple[Response | None, bool, str | None]]:
        """Plain text answers (a verifier's judgement): ``(response, cached, refusal message)`` per
        prompt, through the cache; ``what`` names the request in a replay miss."""
        async def one(messages, index):
            try:
                response, cached = await self.response(messages, index, what)
            except RequestRejected as e:
                return None, False, str(e)
            return response, cached, None

        async def every():
            return list(await asyncio.gather(*(one(m, i) for m, i in prompts)))

        return self._loop.run(every())

    async def _ask_all(self, problem: Problem, prompts: list[tuple[list[dict], int]]) -> list[Sample]:
        """One sample per prompt; an error of one request (other than :class:`ModelUnavailable`,
        which stops the run) is that sample's ``generation_error``, not the end of the others."""
        if self.provider.batched:  # one batch per distinct prompt
            groups: dict[str, tuple[list[dict], list[int]]] = {}
            for messages, index in prompts:
                groups.setdefault(canonical(messages), (messages, []))[1].append(index)
            done: dict[tuple[str, int], Sample] = {}
            for key, (messages, indices) in groups.items():
                try:
                    samples = await self._batched_samples(problem, messages, indices)
                except ModelUnavailable:
                    raise
                except Exception as e:  # noqa: BLE001
                    samples = [self._failed(i, messages, e) for i in indices]
                done.update({(key, s.index): s for s in samples})
            return [done[(canonical(m), i)] for m, i in prompts]
        results = await asyncio.gather(*(self._one_sample(problem, m, i) for m, i in prompts), return_exceptions=True)
        for r in results:  # the model cannot answer at all, or the call was cancelled: that ends the call
            if isinstance(r, BaseException) and (isinstance(r, ModelUnavailable) or not isinstance(r, Exception)):
                raise r
        return [self._failed(i, m, r) if isinstance(r, Exception) else r for (m, i), r in zip(prompts, results)]

    async def response(self, messages: list[dict], index: int, what: str) -> tuple[Response, bool]:
        """(response, whether the cache answered) for one request; raises RequestRejected."""
        key, request = self._request(messages, index)
        response = self.cache.lookup(key, request, what)
        if response is not None:
            return response, True
        response = await self._ask(messages, request["params"])
        self.cache.put(key, request, response)
        return response, False

    async def _one_sample(self, problem: Problem, messages: list[dict], index: int) -> Sample:
        try:
            response, cached = await self.response(messages, index, problem.key)
        except RequestRejected as e:
            return self._rejected(index, messages, e)
        return self._sample(problem, index, messages, response, cached=cached)

    async def _ask(self, messages: list[dict], params: dict) -> Response:
        last = None
        async with self._limit:
            for _ in range(MALFORMED_ATTEMPTS):
                started = time.monotonic()
                try:
                    response = await self.provider.complete(messages, params)
                except MalformedResponse as e:
                    last = e
                    continue
                response.latency_s = time.monotonic() - started
                return response
        raise ProviderError(f"{last} ({MALFORMED_ATTEMPTS} attempts)")

    async def _batched_samples(self, problem: Problem, messages: list[dict], indices: list[int]) -> list[Sample]:
        """For providers that sample many answers in one call (``hf``): the cache first, then one
        batch for every sample it lacks."""
        found, missing = {}, []
        for i in indices:
            key, request = self._request(messages, i)
            hit = self.cache.lookup(key, request, problem.key)
            if hit is not None:
                found[i] = self._sample(problem, i, messages, hit, cached=True)
            else:
                missing.append((i, key, request))
        if missing:
            async with self._limit:
                started = time.monotonic()
                try:
                    responses = await self.provider.complete_batch(messages, [r["params"] for _, _, r in missing])
                except RequestRejected as e:
                    return [found.get(i) or self._rejected(i, messages, e) for i in indices]
            for (i, key, request), response in zip(missing, responses):
                response.latency_s = time.monotonic() - started
                self.cache.put(key, request, response)
                found[i] = self._sample(problem, i, messages, response, cached=False)
        return [found[i] for i in indices]

    @staticmethod
    def _failed(index: int, messages: list[dict], e: Exception) -> Sample:
        meta = {"prompt_sha": sha256(canonical(messages)), "gen_cached": False}
        return Sample(index, None, f"{type(e).__name__}: {e}", failure=GENERATION_ERROR, meta=meta)

    @staticmethod
    def _rejected(index: int, messages: list[dict], e: RequestRejected) -> Sample:
        meta = {"prompt_sha": sha256(canonical(messages)), "gen_cached": False}
        return Sample(index, None, str(e), failure=GENERATION_ERROR, meta=meta)

    def _sample(self, problem: Problem, index: int, messages: list[dict], r: Response, cached: bool) -> Sample:
        meta = {
            "prompt_sha": sha256(canonical(messages)), "response_sha": sha256(r.text),
            "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens, "reasoning_tokens": r.reasoning_tokens,
            "gen_latency_s": r.latency_s, "gen_cost_usd": cost_usd(self.spec.model, r.prompt_tokens, r.completion_tokens, self.options.prices),
            "gen_cached": cached,
        }
        code = extract_code(r.text)
        if code is None:
            return Sample(index, None, no_code_message(r.text), failure=NO_CODE, meta=meta)
        return Sample(index, Candidate(source=code, backend=detect_backend(code), name=f"{problem.path.stem}__s{index}"), meta=meta)

    def close(self) -> None:
        """Closes the provider's client (its HTTP connection pool), cancels requests still in
        flight, stops the event loop's thread and its executor's, and closes the cache. Safe to
        call twice; the model cannot be used afterwards."""
        if self._closed:
            return
        self._closed = True
        try:
            self._loop.run(self.provider.aclose())
        finally:
            self._loop.close()
            self.cache.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def language_model(spec: str, generation=None) -> LanguageModel:
    """The model for a language-model spec; ``generation`` as in :meth:`GenerationOptions.from_value`."""
    return LanguageModel(spec, GenerationOptions.from_value(generation))


__all__ = ["GenerationOptions", "LanguageModel", "language_model", "make_provider"]
