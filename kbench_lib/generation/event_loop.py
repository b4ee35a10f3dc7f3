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
        if self.loop.is_closed() or not self._thread.is_alive():
            coro.close()
            raise RuntimeError("the language model was closed: make a new one")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro):
        """Run ``coro`` on the loop and wait for its result (its exception is raised here)."""
        return self.submit(coro).result()

    async def _wind_down(self) -> None:
        """Cancels every task still running (requests nobody waits for any more), then closes
        asynchronous generators and the loop's default executor (the threads of ``to_thread``)."""
        me = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not me]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.loop.shutdown_asyncgens()
        await self.loop.shutdown_default_executor()

    def close(self, timeout_s: float = 30.0) -> None:
        """Winds the loop down (see :meth:`_wind_down`), stops it and joins its thread."""
        if self.loop.is_closed():
            return
        if self._thread.is_alive():
            try:
                self.submit(self._wind_down()).result(timeout=timeout_s)
            except (concurrent.futures.TimeoutError, RuntimeError):
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()
