"""A worker on a background thread with its own event loop: ``kernelcup submit`` runs one for its own submission
when nobody serves the queue, ``kernelcup serve`` one beside the web server unless ``--no-worker``."""

from __future__ import annotations

import asyncio
import threading

from leaderboards.worker import Worker


class InProcessWorker:
    """A worker on a background thread with its own event loop."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="kernelcup-inprocess-worker", daemon=True)

    def _main(self) -> None:
        async def run() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self._ready.set()
            await self.worker.run(self._stop)

        try:
            asyncio.run(run())
        finally:
            self._ready.set()

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(30)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float) -> None:
        """Ask it to stop (a running job gets the worker's grace period, then goes back to the queue)."""
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout_s)
