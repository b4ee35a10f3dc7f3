"""What a search saw of each judged candidate, kept so that a search can be replayed.

A strategy decides from what the judge reported: the feedback a refinement prompt carries, the
parents evolution selects. Timings differ from one judgement to the next, so a prompt built from a
fresh verdict would differ from the recorded one and miss the response cache on every turn after
the first. The search therefore decides from the *observation* of a candidate: the verdict's
feedback fields as first seen for (problem, candidate source, device, size, precision), stored
beside the responses in the cache's SQLite file. Records always hold the fresh verdict.

Modes follow the response cache: ``live`` uses a stored observation and stores new ones,
``refresh`` stores every fresh one over the old, ``replay`` uses a stored one where there is one
and the fresh verdict otherwise (a model request built from it may then miss the cache, which
names what is missing).
"""
from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
from pathlib import Path

from ..generation.cache import canonical, sha256

# the record columns a strategy may look at
FIELDS = (
    "judged", "compiled", "correct", "trusted", "failure", "flags", "message", "error", "max_abs_err", "runtime_ms",
    "baseline_eager_ms", "speedup_eager", "speedup_compile", "sol_ms", "n_kernels", "custom_kernel_share", "top_kernels",
    "device", "device_name", "small", "backend", "precision", "judge_s",
)


def _plain(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, tuple):
        return list(value)
    return value


def observation_from_row(row: dict) -> dict:
    """The feedback fields of a record row, as plain JSON values."""
    obs = {k: _plain(row.get(k)) for k in FIELDS}
    if obs["judged"] is None:
        obs["judged"] = True
    tk = obs.get("top_kernels")
    if isinstance(tk, dict):
        obs["top_kernels"] = [[k, v] for k, v in tk.items()]
    elif tk:
        obs["top_kernels"] = [list(pair) for pair in tk]
    obs["flags"] = list(obs.get("flags") or [])
    obs["trusted"] = bool(obs.get("correct")) and not obs["flags"]
    return obs


def observation_key(problem_sha: str, candidate_sha: str, device_name: str | None, small: bool | None, precision: str) -> str:
    return sha256(canonical([problem_sha, candidate_sha, device_name or "", bool(small), precision]))


class ObservationStore:
    """Observations in the response cache's SQLite file (table ``observations``)."""

    def __init__(self, path: str | Path, mode: str = "live"):
        self.path, self.mode = Path(path), mode
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
        with self._lock, self._db:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS observations (key TEXT PRIMARY KEY, observation TEXT, created REAL)")

    def get(self, key: str) -> dict | None:
        with self._lock:
            row = self._db.execute("SELECT observation FROM observations WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, observation: dict) -> None:
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO observations VALUES (?, ?, ?)", (key, json.dumps(observation, default=str), time.time()))

    def settle(self, key: str, fresh: dict) -> dict:
        """The observation the search decides from, given the ``fresh`` one (see the module docstring)."""
        if self.mode != "refresh":
            known = self.get(key)
            if known is not None:
                return known
        if self.mode != "replay":
            self.put(key, fresh)
        return fresh

    def close(self) -> None:
        with self._lock:
            self._db.close()
