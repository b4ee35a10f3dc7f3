"""An exception raised in another thread of this process, at its next bytecode: how a judgement
that is no longer wanted (a cancelled lab cell, an interrupted batch) is stopped wherever its thread
is in the judge's own work (preparing a reference, timing a baseline, re-checking outputs), which no
worker's end reaches. A thread blocked in one native call sees it when that call returns.

A block that must not be cut in the middle (a request to a fork server that other judgements share:
cut between its request and its reply, the server's stream would be out of step) runs
:func:`shielded`: a stop asked for meanwhile is raised as the block ends."""
from __future__ import annotations

import contextlib
import ctypes
import threading

_lock = threading.Lock()
_shielded: dict[int, int] = {}  # thread ident -> depth of shielded blocks
_pending: dict[int, type[BaseException]] = {}  # stops asked for inside a shielded block


def raise_in(thread_id: int, exc_type: type[BaseException] | None) -> None:
    """Raises ``exc_type`` in the thread ``thread_id`` at its next bytecode, or where its shielded block
    ends if it is in one; None takes back one not yet raised."""
    with _lock:
        if exc_type is None:
            _pending.pop(thread_id, None)
        elif thread_id in _shielded:
            _pending[thread_id] = exc_type
            return
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc_type) if exc_type else None)


@contextlib.contextmanager
def shielded():
    """No stop (:func:`raise_in`) lands inside the block; one asked for meanwhile is raised as it ends."""
    ident = threading.get_ident()
    with _lock:
        _shielded[ident] = _shielded.get(ident, 0) + 1
    try:
        yield
    finally:
        with _lock:
            depth = _shielded[ident] - 1
            if depth:
                _shielded[ident] = depth
            else:
                del _shielded[ident]
            pending = _pending.pop(ident, None) if not depth else None
        if pending is not None:
            raise pending
