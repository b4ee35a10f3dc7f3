"""The prepared reference sides a batch's judging thread holds (:class:`PreparedReferences`).

A problem's reference side (:func:`kbench_lib.judging.pipeline.prepare_problem`: seeds, expected outputs, the
eager baseline, the reference's profile) is prepared once per judging thread and shared by every
candidate of the problem it judges; this holds them until the problem's last sample is judged,
within a count and memory budgets. A reference that cannot be prepared is held as the reason
(a string), recorded for each of the problem's candidates.
"""
from __future__ import annotations

import logging
import time
import traceback
from collections import OrderedDict
from dataclasses import replace

import torch

from ..judging.pipeline import JudgeError, JudgeOptions, prepare_problem
from ..judging.prepared import PreparationCancelled
from ..core.provenance import host_memory
from ..suite.problems import Problem

# a batch's timeline at DEBUG, one record per event, its fields as attributes (``event``, ``device``,
# ``key``, ``seconds``): benchmarks/throughput.py collects them to show where each GPU's start went
timeline = logging.getLogger("kbench.timeline")


def mark(event: str, device: str, key: str | None = None, seconds: float | None = None, parts: dict | None = None) -> None:
    """One event of the batch's timeline (``parts``: what it was made of, where that is known: seconds by
    part, or an error)."""
    timeline.debug("%s %s", event, key or "", extra={"event": event, "device": device, "key": key, "seconds": seconds,
                                                    "parts": parts})


def prepare_reference(problem: Problem, device: str, opts: JudgeOptions, cancel=None):
    """The problem's reference side on ``device``, or the reason it failed (recorded per candidate).
    Raises :class:`PreparationCancelled` when ``cancel()`` gave it up (nothing failed)."""
    try:
        return prepare_problem(problem, replace(opts, device=device), device, cancel=cancel)
    except PreparationCancelled:
        raise
    except JudgeError as e:
        return str(e)
    except Exception:  # noqa: BLE001
        return traceback.format_exc()[-3000:]


def release_reference(prepared) -> None:
    """Gives back what a prepared reference holds (nothing for a failure's reason)."""
    if prepared is not None and not isinstance(prepared, str):
        prepared.release()


class PreparedReferences:
    """The prepared reference sides of one judging thread's problems. A language model's answers
    for several problems interleave, so each is held until its problem's last sample is judged
    (:meth:`release`): preparing it again would draw fresh seeds and time the eager baseline anew,
    so that one problem's samples were set against different baselines. The least recently used is
    let go past ``keep`` problems, past this thread's share of host memory (a quarter of the
    machine's or its cgroup's, split between the judging threads), or, on a GPU, past the share of
    device memory one problem's expected outputs may take (``prepared.DEVICE_SHARE``): held
    references must not take the memory the candidates need."""

    def __init__(self, device: str, opts: JudgeOptions, keep: int = 16, budget: int | None = None, lanes: int = 1,
                 device_budget: int | None = None):
        self.device, self.opts, self.keep = device, opts, keep
        self.budget = budget if budget is not None else host_memory() // 4 // max(1, lanes)
        self.device_budget = device_budget if device_budget is not None else device_share_bytes(device)
        self._held: OrderedDict = OrderedDict()
        self.prepared = 0  # references prepared (a problem prepared again after eviction counts twice)

    def get(self, problem: Problem, busy=(), cancel=None):
        """The problem's prepared reference (prepared now if not held); ``busy``: keys of problems
        whose candidates are still being judged, never let go here. ``cancel``: asked before each
        case of a preparation; once it says so the preparation is given up and None returned
        (nothing held: the problem is prepared again when it is needed)."""
        if problem.key in self._held:
            self._held.move_to_end(problem.key)
            return self._held[problem.key]
        t0 = time.monotonic()
        try:
            prepared = prepare_reference(problem, self.device, self.opts, cancel=cancel)
        except PreparationCancelled:
            mark("cancelled", self.device, problem.key, round(time.monotonic() - t0, 3))
            return None
        self._held[problem.key] = prepared
        self.prepared += 1
        mark("prepared", self.device, problem.key, round(time.monotonic() - t0, 3))
        while self._over():
            key = next((k for k in self._held if k != problem.key and k not in busy), None)
            if key is None:
                break
            release_reference(self._held.pop(key))
        return prepared

    def holds(self, key: str) -> bool:
        return key in self._held

    def held(self, key: str):
        """The problem's reference if it is held (its use order unchanged), else None."""
        return self._held.get(key)

    def keys(self) -> list[str]:
        return list(self._held)

    def has_room(self) -> bool:
        """Whether one more problem may be prepared ahead of its samples: under ``keep`` and under
        half of each memory budget, so that preparing ahead never lets a reference go."""
        if len(self._held) + 1 >= self.keep:
            return False
        host, device = self._held_bytes()
        return 2 * host < self.budget and 2 * device < self.device_budget

    def _over(self) -> bool:
        if len(self._held) > self.keep:
            return True
        host, device = self._held_bytes()
        return host > self.budget or device > self.device_budget

    def _held_bytes(self) -> tuple[int, int]:
        """(host, device) bytes the held references take (a failure's reason takes none)."""
        held = [p.held_bytes() for p in self._held.values() if hasattr(p, "held_bytes")]
        return sum(h["host"] for h in held), sum(h["device"] for h in held)

    def release(self, key: str) -> None:
        if key in self._held:
            release_reference(self._held.pop(key))

    def release_all(self) -> None:
        while self._held:
            release_reference(self._held.popitem()[1])




def device_share_bytes(device: str) -> int:
    """The device memory held references may take on ``device`` (``prepared.DEVICE_SHARE`` of it; unbounded off CUDA)."""
    if not device.startswith("cuda") or not torch.cuda.is_available():
        return 1 << 62
    from ..judging.prepared import DEVICE_SHARE

    return int(DEVICE_SHARE * torch.cuda.get_device_properties(torch.device(device)).total_memory)
