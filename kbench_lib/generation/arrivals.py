"""A language model's samples one at a time, as they are answered, for a runner that judges while
the model is still generating (:meth:`.LanguageModel.arrivals`).

Every wanted sample of every problem is asked for at once on the model's event loop (at most
``concurrency`` requests talk to the provider at a time); each answer, parsed into a
:class:`~kbench_lib.generation.models.Sample`, goes into a queue that the caller's thread reads. The queue
is bounded: a request starts only while fewer than ``queue_size`` answers wait for the caller
(for providers that sample a whole problem in one call, ``hf``, a batch counts as one), so a
caller that falls behind slows the requests down instead of piling answers up. A request the
server refused, or one that broke in an unexpected way, is a sample with the failure
``generation_error``; a problem whose prompt cannot be built is one arrival with that error; a
:class:`~kbench_lib.generation.models.ModelUnavailable` (a bad key, retries spent, a replay miss) cancels
what is in flight and is raised to the caller. Leaving the iteration early cancels it as well;
requests cancelled under a waiting caller (the model closed by another thread) raise a
``RuntimeError`` there instead of leaving it waiting.
"""
from __future__ import annotations

import asyncio
import queue
from typing import Iterator

from tqdm.auto import tqdm

from .samples import Arrival, ModelUnavailable, Sample
from ..suite.problems import Problem
from .cache import canonical, sha256
from .errors import GENERATION_ERROR
from .prompts import build_messages

_DONE = object()


class _Stopped:
    def __init__(self, errors: BaseExceptionGroup):
        while isinstance(errors, BaseExceptionGroup):  # the first error itself, out of the nested task groups
            errors = errors.exceptions[0]
        self.error = errors


async def _ask_problem(model, problem: Problem, indices: list[int], room: asyncio.Semaphore, out: queue.Queue, bar) -> None:
    """One problem's samples asked of ``model``: one request for all of them where its provider
    batches, one per sample otherwise, each request waiting for room in the queue (``room``, freed
    by the consumer as it takes a request's last sample). Each sample goes to ``out`` as an
    :class:`Arrival`, with whether it frees its request's room; a prompt that cannot be built, or
    a request that fails, is its samples' record, not the batch's end."""
    try:
        messages = build_messages(problem, model.options.prompt)
    except Exception as e:  # noqa: BLE001 - that problem's record, not the batch's end
        out.put((Arrival(problem, None, f"cannot build the prompt: {type(e).__name__}: {e}"), False))
        return
    left = len(indices)

    def deliver(samples: list[Sample]) -> None:
        nonlocal left
        for n, s in enumerate(samples):
            left -= 1
            bar.update()
            out.put((Arrival(problem, s, last=left == 0), n == len(samples) - 1))  # the unit's last one frees its room

    async def unit(indices: list[int]) -> None:
        await room.acquire()
        try:
            if model.provider.batched:
                samples = await model._batched_samples(problem, messages, indices)
            else:
                samples = [await model._one_sample(problem, messages, indices[0])]
        except (ModelUnavailable, asyncio.CancelledError):
            room.release()
            raise
        except Exception as e:  # noqa: BLE001 - a broken request is its samples' record
            meta = {"prompt_sha": sha256(canonical(messages)), "gen_cached": False}
            samples = [Sample(i, None, f"{type(e).__name__}: {e}", failure=GENERATION_ERROR, meta=meta) for i in indices]
        deliver(samples)

    units = [indices] if model.provider.batched else [[i] for i in indices]
    async with asyncio.TaskGroup() as group:
        for u in units:
            group.create_task(unit(u))


def stream_arrivals(model, problems: list[Problem], skip=frozenset(), queue_size: int | None = None) -> Iterator[Arrival]:
    """:class:`Arrival`s of ``model`` (a :class:`.LanguageModel`) on ``problems`` in the order they
    are answered; (problem key, sample index) pairs in ``skip`` are not asked for."""
    o = model.options
    todo = [(p, [i for i in range(o.samples) if (p.key, i) not in skip]) for p in problems]
    todo = [(p, wanted) for p, wanted in todo if wanted]
    size = max(1, queue_size or o.queue_size or 2 * (o.concurrency or model.provider.default_concurrency))
    out: queue.Queue = queue.Queue()
    room = asyncio.Semaphore(size)
    bar = tqdm(total=sum(len(w) for _, w in todo), desc=f"generating ({model.name})", unit="sample", disable=not o.progress)

    def cancelled() -> _Stopped:
        return _Stopped(RuntimeError(f"the requests to {model.name} were cancelled (was the model closed?)"))

    async def feed() -> None:
        end = None
        try:  # the caller waits for an end marker, however this ends (a cancellation included)
            try:
                async with asyncio.TaskGroup() as group:
                    for p, wanted in todo:
                        group.create_task(_ask_problem(model, p, wanted, room, out, bar))
            except* ModelUnavailable as errors:
                end = _Stopped(errors)
            except* Exception as errors:  # noqa: BLE001 - a bug here must reach the caller, not hang it
                end = _Stopped(errors)
            else:
                end = _DONE
        finally:
            out.put((end if end is not None else cancelled(), False))

    future = model._loop.submit(feed())
    # cancelled before it started, feed() never runs its finally
    future.add_done_callback(lambda f: out.put((cancelled(), False)) if f.cancelled() else None)
    try:
        while True:
            item, frees = out.get()
            if frees:
                model._loop.loop.call_soon_threadsafe(room.release)
            if item is _DONE:
                return
            if isinstance(item, _Stopped):
                raise item.error
            yield item
    finally:
        future.cancel()
        bar.close()


__all__ = ["stream_arrivals"]
