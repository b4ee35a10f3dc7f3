"""A private asyncio event loop on a background thread, so that synchronous callers (the
runner, a Jupyter cell whose own loop is already running) can run many requests concurrently."""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading


class EventLoopThread:
    def __init__(self, name: str = "kbench-generation"):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro):
        """Run ``coro`` on the loop and wait for its result (its exception is raised here)."""
        return self.submit(coro).result()

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()
