"""A small time-bounded memo for public reads that many clients ask at once (a leaderboard's ranking page).

Each uvicorn worker has its own; an answer is at most ``ttl_s`` old (``KERNELCUP_API_RANKINGS_CACHE_S``), which is
what lets 200 readers of one ranking cost one query a second instead of 200. Errors are never cached.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

MAX_ENTRIES = 1024


class TTLCache:
    def __init__(self, ttl_s: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.clock = clock
        self._data: dict[Hashable, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        if self.ttl_s <= 0:
            return compute()
        now = self.clock()
        with self._lock:
            hit = self._data.get(key)
        if hit is not None and now - hit[0] < self.ttl_s:
            return hit[1]
        value = compute()
        with self._lock:
            if len(self._data) >= MAX_ENTRIES:
                self._data.clear()
            self._data[key] = (now, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
