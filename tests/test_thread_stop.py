"""kbench_lib.core.thread_stop: an exception raised in another thread lands at its next bytecode, or
where its shielded block ends; one taken back never lands."""
from __future__ import annotations

import threading
import time

from kbench_lib.core import thread_stop


class _Stop(BaseException):
    pass


def _looping(events: list, shield_s: float = 0.0):
    """A thread that records where a stop reached it: in its shielded block's first ``shield_s`` or after."""
    started = threading.Event()

    def body():
        started.set()
        try:
            if shield_s:
                with thread_stop.shielded():
                    end = time.monotonic() + shield_s
                    while time.monotonic() < end:
                        pass
                    events.append("shield ended")
            end = time.monotonic() + 20
            while time.monotonic() < end:
                time.sleep(0.01)
            events.append("not stopped")
        except _Stop:
            events.append("stopped")

    t = threading.Thread(target=body, daemon=True)
    t.start()
    started.wait()
    return t


def test_a_stop_lands_at_the_threads_next_bytecode():
    events: list = []
    t = _looping(events)
    time.sleep(0.1)
    thread_stop.raise_in(t.ident, _Stop)
    t.join(5)
    assert events == ["stopped"], events


def test_a_stop_asked_for_in_a_shielded_block_lands_as_it_ends():
    events: list = []
    t = _looping(events, shield_s=0.5)
    time.sleep(0.1)
    thread_stop.raise_in(t.ident, _Stop)  # inside its block: held until the block ends
    t.join(5)
    assert events == ["shield ended", "stopped"], events


def test_a_stop_taken_back_never_lands():
    events: list = []
    t = _looping(events, shield_s=0.5)
    time.sleep(0.1)
    thread_stop.raise_in(t.ident, _Stop)
    thread_stop.raise_in(t.ident, None)
    time.sleep(0.8)  # past its block
    assert events == ["shield ended"], events
    thread_stop.raise_in(t.ident, _Stop)
    t.join(5)
    assert events == ["shield ended", "stopped"], events
