"""The record/replay cache of model responses: one SQLite file, content-addressed.

The key is the SHA-256 of a canonical JSON of everything that determines a response: provider,
model, messages, sampling parameters and the sample index. The endpoint's address and the API key
are not part of it (a run replays on a machine with neither), and nothing secret is stored: a row
holds the request that made it (for the error that names a miss), the response text and its usage.

Modes:

- ``live``: a hit is returned, a miss is asked for and stored;
- ``replay``: never calls a model; a miss raises :class:`CacheMiss` naming what is missing;
- ``refresh``: always asks, and overwrites what was stored.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .samples import ModelUnavailable

MODES = ("live", "replay", "refresh")
DEFAULT_PATH = Path(__file__).resolve().parents[2] / "results" / "cache" / "generation.sqlite"


def canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def request_key(provider: str, model: str, messages: list[dict], params: dict, sample: int) -> str:
    return sha256(canonical({"provider": provider, "model": model, "messages": messages, "params": params, "sample": sample}))


@dataclass
class Response:
    """What a model answered to one request, as stored and replayed."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    latency_s: float | None = None
    finish_reason: str | None = None
    extra: dict = field(default_factory=dict)  # provider details worth keeping (the served model's name ...)


class CacheMiss(ModelUnavailable, LookupError):
    """Replay mode found no stored response for a request (the batch stops: see ModelUnavailable)."""


class ResponseCache:
    """A SQLite store of :class:`Response` rows; safe to share between threads of one process."""

    def __init__(self, path: str | Path = DEFAULT_PATH, mode: str = "live"):
        if mode not in MODES:
            raise ValueError(f"cache mode must be one of {MODES}, not {mode!r}")
        self.path = Path(path)
        self.mode = mode
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
        with self._lock, self._db:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, provider TEXT, model TEXT, sample INTEGER,"
                " request TEXT, response TEXT, created REAL)"
            )

    def get(self, key: str) -> Response | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return Response(**json.loads(row[0])) if row else None

    def put(self, key: str, request: dict, response: Response) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, request["provider"], request["model"], request["sample"], canonical(request), canonical(asdict(response)), time.time()),
            )

    def lookup(self, key: str, request: dict, what: str) -> Response | None:
        """The stored response for ``key`` if this mode may use one; None when it must be asked
        for. In replay mode a miss raises :class:`CacheMiss` with ``what`` (e.g. the problem)."""
        if self.mode == "refresh":
            return None
        hit = self.get(key)
        if hit is None and self.mode == "replay":
            raise CacheMiss(
                f"replay: no stored response for {request['provider']}:{request['model']} on {what}, sample {request['sample']} "
                f"(params {canonical(request['params'])}, key {key[:16]}) in {self.path}; run once in live mode to record it"
            )
        return hit

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
